"""z3 proofs of the rules the KRaft specs and the reference implementation share.

One module per rule family:

* `kraft_log`      KIP-595 Vote log comparison, EndOffsetForEpoch, DivergingEpoch + truncation
* `kraft_hwm`      KIP-595 majority offset, current-epoch rule, leader / follower HWM
* `elr_controller` KIP-966 controller transitions: inductive ISR / ELR invariants
* `elr_recovery`   KIP-966 election order, unclean recovery decision and choice
* `elr_hwm`        KIP-966 HWM min-ISR rule, acks=all

`registry.obligations()` lists every obligation; `core.check` runs one.  `kraftcheck prove`
is the command; docs/proofs.md says what is proved, for which sizes, and how each encoding
maps to the TLA+ operator and the Python function.
"""
