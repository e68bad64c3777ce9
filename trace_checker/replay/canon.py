"""Canonical keys of a graph's states and edges: the same whatever TLC's state numbering.

A dumped graph numbers its states in the order TLC's workers found them, which a 2-worker run
does not fix; the codec's value ids follow the same order.  Replay's choices -- which edges a
seeded sample picks, which shortest path leads to a state, in which order successors and cycles
are tried -- must not depend on it, or the same `--edges "sample N" --seed S` replays other
edges on another dump of the same config.  So they are keyed by the states' values:

    state key   blake2b over the sorted variables' canonical JSON texts (the codec keeps one
                text per distinct value: each text is hashed once)
    edge key    blake2b over (source key, action label, destination key)

`sample_edges` orders the edges by their key salted with the seed and takes the first N (a
seeded sample, independent of the numbering), returned in canonical edge order (source key,
action, destination key: `edge_order`).
"""

from __future__ import annotations

from hashlib import blake2b

from trace_checker.graph import StateGraph

__all__ = ["state_keys", "edge_key", "edge_order", "sample_edges", "ordered_succ"]

_ATTR = "_replay_state_keys"
_SUCC = "_replay_ordered_succ"


def state_keys(g: StateGraph) -> list[bytes]:
    """One 16-byte key per state number (cached on the graph)."""
    keys = getattr(g, _ATTR, None)
    if keys is not None and len(keys) == len(g.states):
        return keys
    codec = g.codec
    order = sorted(range(len(codec.variables)), key=lambda i: codec.variables[i])
    digests = [[blake2b(f"{codec.variables[i]}={t}".encode(), digest_size=16).digest()
                for t in codec.texts[i]] for i in range(len(codec.variables))]
    keys = []
    for st in g.states:
        h = blake2b(digest_size=16)
        for i in order:
            h.update(digests[i][st[i]])
        keys.append(h.digest())
    setattr(g, _ATTR, keys)
    return keys


def edge_key(g: StateGraph, e: tuple[int, int, int], salt: bytes = b"") -> bytes:
    k = state_keys(g)
    s, a, d = e
    return blake2b(salt + k[s] + g.actions[a].encode() + b"\0" + k[d],
                   digest_size=16).digest()


def sample_edges(g: StateGraph, n: int, seed: int) -> list[tuple[int, int, int]]:
    """N edges chosen by the seed, the same edges (as values) on any dump of the graph; in
    canonical edge order."""
    salt = f"kraftcheck-replay-sample:{seed}:".encode()
    edges = [(s, a, d) for s, lst in enumerate(g.succ) for a, d in lst]
    chosen = sorted(edges, key=lambda e: edge_key(g, e, salt))[:n]
    return sorted(chosen, key=lambda e: edge_order(g, e))


def edge_order(g: StateGraph, e: tuple[int, int, int]) -> tuple:
    """The canonical order of edges: source key, action label, destination key."""
    k = state_keys(g)
    return (k[e[0]], g.actions[e[1]], k[e[2]])


def ordered_succ(g: StateGraph, s: int) -> list[tuple[int, int]]:
    """The successors (action id, destination) of `s` by action label, then destination key
    (memoised on the graph)."""
    memo = getattr(g, _SUCC, None)
    if memo is None:
        memo = {}
        setattr(g, _SUCC, memo)
    out = memo.get(s)
    if out is None:
        k = state_keys(g)
        acts = g.actions
        out = memo[s] = sorted(g.succ[s], key=lambda x: (acts[x[0]], k[x[1]]))
    return out
