----------------------------- MODULE MCKRaftBackoff -----------------------------
(***************************************************************************)
(* Model-checking wrapper for KRaftBackoff.tla: MCKRaft.tla's clusterId    *)
(* assignment.  No symmetry: every configuration checks liveness.          *)
(***************************************************************************)
EXTENDS KRaftBackoff, MCKRaft

\* Reachability witness (an invariant a run is expected to violate): the
\* quiet phase is reached with a leader that a majority follows.
NoLeaderWhenQuiet ==
    ~(faultsStopped /\ \E l \in Voters : LeaderFollowedByMajority(l))

=============================================================================
