"""KIP-595 (Raft metadata quorum): a pure replica state machine, the rules it shares with
spec/KRaft.tla, the mapping to the spec's variables, and its simulator adapter.

See docs/refimpl.md.  Entry points: `refimpl.kraft.node.KRaftNode` (the handlers),
`refimpl.kraft.adapter.KRaftAdapter` (for refimpl.sim), `refimpl.kraft.rules`.
"""
