"""The producer (acks=all and acks=1) and the admin client (min.insync.replicas changes), as one
pure client node.  Acknowledged records are what NoAckedRecordLost protects; the client keeps
them on its disk so that a client restart does not forget them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from refimpl.sim.protocol import Envelope, Persist, Transition

from .messages import AlterMinIsrRequest, ProduceRequest, ProduceResponse
from .types import ElrConfig, LogEntry

__all__ = ["AckedRecord", "ClientState", "Client"]


@dataclass(frozen=True, order=True)
class AckedRecord:
    """A record the leader acknowledged: its offset, the entry, and the acks setting."""

    offset: int
    entry: LogEntry
    acks: str
    replicas_with_record: int = 0   # ghost: replicas the leader knew had it when acking
    min_isr: int = 0                # ghost: the effective min ISR the leader used


@dataclass(frozen=True)
class ClientState:
    next_request_id: int = 1
    outstanding: tuple[tuple[int, str, str], ...] = ()   # (request id, value, acks)
    acked: tuple[AckedRecord, ...] = ()                   # acks=all records, in ack order
    acked_one: int = 0                                    # acks=1 acknowledgements received

    def acked_all(self) -> tuple[AckedRecord, ...]:
        return self.acked


class Client:
    def __init__(self, config: ElrConfig):
        self.config = config

    def initial(self) -> ClientState:
        return ClientState()

    def restart(self, disk: dict) -> ClientState:
        return ClientState(next_request_id=disk.get("next_request_id", 1),
                           acked=disk.get("acked", ()), acked_one=disk.get("acked_one", 0))

    def produce(self, s: ClientState, leader: str, value: str, acks: str) -> Transition:
        rid = s.next_request_id
        s2 = replace(s, next_request_id=rid + 1,
                     outstanding=s.outstanding + ((rid, value, acks),))
        return Transition(state=s2, action="SendProduce",
                          params={"leader": leader, "value": value, "acks": acks},
                          sends=(Envelope(self.config.producer, leader,
                                          ProduceRequest(rid, value, acks)),),
                          persist=(Persist("next_request_id", rid + 1),))

    def alter_min_isr(self, s: ClientState, min_isr: int) -> Transition:
        return Transition(state=s, action="SendAlterMinIsr", params={"minIsr": min_isr},
                          sends=(Envelope(self.config.producer, self.config.controller,
                                          AlterMinIsrRequest(min_isr)),))

    def on_message(self, s: ClientState, src: str, msg, now_ms: int) -> Transition | None:
        if not isinstance(msg, ProduceResponse):
            return None
        if not any(r == msg.request_id for r, _, _ in s.outstanding):
            return None                               # a duplicate or a late answer
        rest = tuple(o for o in s.outstanding if o[0] != msg.request_id)
        if msg.error != "NONE":
            return Transition(state=replace(s, outstanding=rest), action="ProduceFailed",
                              params={"error": msg.error})
        if msg.acks != "all":
            s2 = replace(s, outstanding=rest, acked_one=s.acked_one + 1)
            return Transition(state=s2, action="ProduceAcked",
                              params={"offset": msg.offset, "acks": msg.acks},
                              persist=(Persist("acked_one", s2.acked_one),))
        rec = AckedRecord(msg.offset, msg.entry, msg.acks, msg.replicas_with_record, msg.min_isr)
        s2 = replace(s, outstanding=rest, acked=s.acked + (rec,))
        return Transition(state=s2, action="ProduceAcked",
                          params={"offset": msg.offset, "acks": msg.acks},
                          persist=(Persist("acked", s2.acked),))
