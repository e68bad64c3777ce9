------------------------------- MODULE KRaftLog -------------------------------
(***************************************************************************)
(* Pure helper operators on KRaft logs, used by KRaft.tla.                 *)
(*                                                                         *)
(* KIP-595 §"Log Structure": "Records are uniquely defined by their offset *)
(* in the log and the epoch of the leader that appended the record."       *)
(*                                                                         *)
(* A log is a TLA+ sequence of records [epoch |-> e, value |-> v].  Kafka  *)
(* offsets start at 0, TLA+ sequences at 1, so the record at Kafka offset  *)
(* o is l[o + 1], and the log end offset (LEO, the offset the next record  *)
(* will get) is Len(l).  A high watermark h means "the records at offsets  *)
(* 0 .. h-1, i.e. l[1..h], are committed".                                 *)
(*                                                                         *)
(* Nothing here refers to a variable: every operator is a function of its  *)
(* arguments only, so the Python reference implementation can mirror each  *)
(* one directly.                                                           *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

Min(a, b) == IF a <= b THEN a ELSE b
Max(a, b) == IF a >= b THEN a ELSE b
MaxOf(S)  == CHOOSE x \in S : \A y \in S : x >= y   \* S finite, non-empty

\* The epoch of the last record, 0 for an empty log (epochs start at 1).
LastEpoch(l) == IF l = << >> THEN 0 ELSE l[Len(l)].epoch

\* s is a prefix of t.
IsPrefix(s, t) == Len(s) <= Len(t) /\ SubSeq(t, 1, Len(s)) = s

\* The committed prefix of a log under high watermark h (h <= Len(l)).
Prefix(l, h) == SubSeq(l, 1, h)

(***************************************************************************)
(* KIP-595 §"Vote Request Handling": "If the logs' last entry have         *)
(* different epochs, then the log with the later epoch is more up-to-date. *)
(* If the logs end with the same epoch, then whichever log is longer is    *)
(* more up-to-date."  TRUE iff a candidate whose log ends with epoch       *)
(* lastEpoch at end offset endOffset is at least as up-to-date as l.       *)
(***************************************************************************)
IsUpToDate(lastEpoch, endOffset, l) ==
    \/ lastEpoch > LastEpoch(l)
    \/ /\ lastEpoch = LastEpoch(l)
       /\ endOffset >= Len(l)

(***************************************************************************)
(* KIP-595 §"FetchRequest Handling", step 3 (and the leader-epoch cache    *)
(* it refers to).  For an epoch e:                                         *)
(*   LargestEpochAtMost(l, e): the largest epoch <= e that has a record in *)
(*                             l, or 0 if there is none;                   *)
(*   EndOffsetForEpoch(l, e):  the end offset of that epoch in l, i.e. the *)
(*                             offset of the first record whose epoch is   *)
(*                             > e, or Len(l) if there is none.            *)
(***************************************************************************)
LargestEpochAtMost(l, e) ==
    MaxOf({0} \cup {l[k].epoch : k \in {k \in 1..Len(l) : l[k].epoch <= e}})

EndOffsetForEpoch(l, e) ==
    IF \E k \in 1..Len(l) : l[k].epoch > e
    THEN (CHOOSE k \in 1..Len(l) : l[k].epoch > e
                                 /\ \A j \in 1..(k - 1) : l[j].epoch <= e) - 1
    ELSE Len(l)

(***************************************************************************)
(* KIP-595 §"FetchRequest Handling", step 3: "The leader assumes that the  *)
(* LastFetchedEpoch is the epoch of the offset prior to FetchOffset.       *)
(* FetchOffset is expected to be in the range of offsets with an epoch of  *)
(* LastFetchedEpoch or it is the start offset of the next epoch in the     *)
(* log."  A fetcher with an empty log sends (0, 0), which is always valid. *)
(***************************************************************************)
IsValidFetchPosition(l, fetchOffset, lastFetchedEpoch) ==
    /\ LargestEpochAtMost(l, lastFetchedEpoch) = lastFetchedEpoch
    /\ fetchOffset <= EndOffsetForEpoch(l, lastFetchedEpoch)

(***************************************************************************)
(* The DivergingEpoch field of the FetchResponse when the position is not  *)
(* valid: the largest epoch below-or-equal the fetcher's LastFetchedEpoch  *)
(* present in the leader's log, and its end offset (Fetch schema: "the     *)
(* largest epoch and its end offset such that subsequent records are known *)
(* to diverge").  See docs/spec-kraft.md, "Findings", for the wording      *)
(* differences between the KIP's sections on this point.                   *)
(***************************************************************************)
NoDivergence == [epoch |-> -1, endOffset |-> -1]   \* schema default: not set

DivergingEpochFor(l, lastFetchedEpoch) ==
    [epoch     |-> LargestEpochAtMost(l, lastFetchedEpoch),
     endOffset |-> EndOffsetForEpoch(l, lastFetchedEpoch)]

(***************************************************************************)
(* KIP-595 §"FetchResponse Handling", step 2: "truncate from the log all   *)
(* of the offsets greater than or equal to DivergingEpoch.EndOffset and    *)
(* truncate any offset with an epoch greater than DivergingEpoch.Epoch"    *)
(* (the KIP text says "...greater than DivergingEpoch.EndOffset", an       *)
(* evident typo for .Epoch).                                               *)
(***************************************************************************)
TruncateToDivergence(l, div) ==
    SubSeq(l, 1, Min(div.endOffset, EndOffsetForEpoch(l, div.epoch)))

(***************************************************************************)
(* Kafka 3.7's reading of the same step (KRaft.tla's switch                *)
(* KafkaTruncationKeepsUnknownEpoch; ReplicatedLog.truncateToEndOffset, a  *)
(* default method of ReplicatedLog.java:213 that MockLog and the harness's *)
(* log inherit): localEndOffset = endOffsetForEpoch(div.epoch), i.e. the   *)
(* largest epoch <= div.epoch in l and its end offset; if that epoch is    *)
(* div.epoch the log is cut at min(localEndOffset, div.endOffset), as      *)
(* above, otherwise at localEndOffset: the leader's EndOffset is ignored   *)
(* when the follower lacks DivergingEpoch.Epoch, and the follower keeps    *)
(* the rest of its own largest epoch below it (KIP-595 §"FetchResponse     *)
(* Handling" step 2 cuts at EndOffset in every case).  For div.epoch = 0   *)
(* Kafka takes min(div.endOffset, Len(l)); a leader answers epoch 0 only   *)
(* with EndOffset 0 (it holds no epoch <= LastFetchedEpoch, so the end of  *)
(* that epoch is its first offset), where both readings cut at 0.          *)
(***************************************************************************)
TruncateToEndOffset(l, div) ==
    IF div.epoch > 0 /\ LargestEpochAtMost(l, div.epoch) # div.epoch
    THEN SubSeq(l, 1, EndOffsetForEpoch(l, div.epoch))
    ELSE TruncateToDivergence(l, div)

(***************************************************************************)
(* The leader's high-watermark candidate (KIP-595 §"FetchRequest Handling" *)
(* step 4, §"Key Concepts": "the largest offset which is replicated to a   *)
(* majority of the voters").  match is a function from voters to their     *)
(* known end offsets (-1 when unknown), IsQuorum a predicate on sets of    *)
(* voters.  Returns the largest h in 1..maxOffset held by a quorum, or 0.  *)
(*                                                                         *)
(* Written as a count: a quorum that holds h also holds every h' in 1..h   *)
(* (the replicas with match >= h' include those with match >= h, and a     *)
(* superset of a quorum is a quorum), so the offsets held by a quorum are  *)
(* 1..k for the largest such k, and their number is k (proofs/kraft_hwm.py *)
(* "majority-offset-is-a-count").  TLC evaluates the set once, where       *)
(* MaxOf's CHOOSE re-evaluates it for every candidate: this operator runs  *)
(* in every ENABLED test of a Fetch delivery, and the count halves the     *)
(* liveness configs' time (kraft-ci-liveness-backoff-progress 21 -> 11 s). *)
(***************************************************************************)
MajorityOffset(match, voters, maxOffset, IsQuorum(_)) ==
    Cardinality({h \in 1..maxOffset : IsQuorum({v \in voters : match[v] >= h})})

(***************************************************************************)
(* KIP-642 (draft) §"Quorum Reassignment": the VoterAssignment control     *)
(* record (Type=2, "VoterAssignmentMessage") carries CurrentVoters and     *)
(* TargetVoters; in a log it is the record                                 *)
(*   [epoch |-> e, value |-> "VoterAssignment",                            *)
(*    currentVoters |-> S, targetVoters |-> T]                             *)
(* with T = NoTarget for the draft's "TargetVoters = null".  Client and    *)
(* LeaderChange records have no currentVoters field, which is how the      *)
(* operators below tell the records apart.                                 *)
(***************************************************************************)
NoTarget == {}

VoterAssignmentRecord(e, S, T) ==
    [epoch |-> e, value |-> "VoterAssignment", currentVoters |-> S, targetVoters |-> T]

IsVoterAssignment(r) == "currentVoters" \in DOMAIN r

\* The index in l of the last VoterAssignment record, 0 if there is none.
LastAssignmentOffset(l) ==
    LET RECURSIVE Back(_)
        Back(k) == IF k = 0 THEN 0
                   ELSE IF IsVoterAssignment(l[k]) THEN k ELSE Back(k - 1)
    IN  Back(Len(l))

\* KIP-642 §"Reassignment Algorithm" step 4 ("followers will begin acting
\* with the new voter information as soon as the log entry has been
\* appended") and its "main subtlety" (a truncated record is reverted): the
\* voter set a replica acts on is CurrentVoters of the last VoterAssignment
\* in its log, committed or not, else the bootstrap voters (quorum.voters).
VoterSetOf(l, bootstrap) ==
    LET k == LastAssignmentOffset(l)
    IN  IF k = 0 THEN bootstrap ELSE l[k].currentVoters

\* The pending TargetVoters of a log (NoTarget when none is pending).
TargetOf(l) ==
    LET k == LastAssignmentOffset(l)
    IN  IF k = 0 THEN NoTarget ELSE l[k].targetVoters

\* Every replica that is or was a voter according to l (bootstrap included).
EverVotersOf(l, bootstrap) ==
    bootstrap \cup UNION {l[k].currentVoters : k \in {k \in 1..Len(l) : IsVoterAssignment(l[k])}}

================================================================================
