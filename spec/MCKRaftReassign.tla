---------------------------- MODULE MCKRaftReassign ----------------------------
(***************************************************************************)
(* Model-checking wrapper for KRaftReassign.tla: the clusterId of the      *)
(* replicas (one cluster) and the symmetry set of the configurations       *)
(* tlc_configs/reassign-*.cfg.  Bounds are CONSTANTS of the spec (guards). *)
(***************************************************************************)
EXTENDS KRaftReassign

MCClusterOf == [i \in Server |-> "cluster-A"]

(***************************************************************************)
(* Symmetry for a configuration with a single target set T and every      *)
(* replica's timer enabled: replicas are interchangeable within the four  *)
(* classes bootstrap voter / observer x in T / not in T, and so are the   *)
(* client values.  (Admin and Nil are fixed.)  Never used with liveness.  *)
(***************************************************************************)
TargetSymmetry ==
    IF Cardinality(TargetSets) = 1 /\ TimeoutVoters = Server
    THEN LET T == CHOOSE t \in TargetSets : TRUE
         IN  {p @@ q @@ r @@ s @@ w :
                 p \in Permutations(Voters \cap T),
                 q \in Permutations(Voters \ T),
                 r \in Permutations(Observers \cap T),
                 s \in Permutations(Observers \ T),
                 w \in Permutations(Values)}
    ELSE Assert(FALSE, "TargetSymmetry needs one target set and TimeoutVoters = Server")

(***************************************************************************)
(* State constraints (bounds: each only removes behaviours, so a violation *)
(* found under them is a behaviour of the unconstrained spec).             *)
(***************************************************************************)
\* At most one Candidate at a time: the randomised election back-off of
\* KIP-595 §"Vote" makes simultaneous candidacies rare (split votes are
\* checked by the configurations without this constraint).
AtMostOneCandidate ==
    Cardinality({i \in Server : role[i] = "Candidate"}) <= 1

\* The AdminClient addresses the leader: an AlterPartitionReassignments
\* request in flight is addressed to a replica that is Leader (the client
\* learns it from the leaderId of a NOT_LEADER_OR_FOLLOWER response,
\* §"AlterPartitionReassignments Response Handling"; that response path is
\* checked by the configurations without this constraint).
AdminAddressesLeader ==
    \A m \in BagToSet(msgs) :
        m.type = "AlterPartitionReassignmentsRequest" => role[m.dest] = "Leader"

(***************************************************************************)
(* Symmetry for a configuration with a single target set T whose timers   *)
(* may fire only at some replicas (TimeoutVoters a proper subset): the     *)
(* replicas are interchangeable within the classes bootstrap voter /       *)
(* observer x in T / not in T x timer / no timer; so are the client values.*)
(***************************************************************************)
TargetTimerSymmetry ==
    IF Cardinality(TargetSets) = 1
    THEN LET T == CHOOSE t \in TargetSets : TRUE
             C(a, b, c) == {i \in Server : /\ (i \in Voters) = a
                                           /\ (i \in T) = b
                                           /\ (i \in TimeoutVoters) = c}
         IN  {p1 @@ p2 @@ p3 @@ p4 @@ p5 @@ p6 @@ p7 @@ p8 @@ w :
                 p1 \in Permutations(C(TRUE, TRUE, TRUE)),
                 p2 \in Permutations(C(TRUE, TRUE, FALSE)),
                 p3 \in Permutations(C(TRUE, FALSE, TRUE)),
                 p4 \in Permutations(C(TRUE, FALSE, FALSE)),
                 p5 \in Permutations(C(FALSE, TRUE, TRUE)),
                 p6 \in Permutations(C(FALSE, TRUE, FALSE)),
                 p7 \in Permutations(C(FALSE, FALSE, TRUE)),
                 p8 \in Permutations(C(FALSE, FALSE, FALSE)),
                 w \in Permutations(Values)}
    ELSE Assert(FALSE, "TargetTimerSymmetry needs one target set")

\* At most one Fetch request or response in flight (one copy), so that the
\* second message slot serves elections, EndQuorumEpoch, the administrator,
\* loss, duplication and reordering (as MCKRaft's AtMostOneFetchInFlight).
AtMostOneFetchInFlight ==
    LET fetches == {m \in BagToSet(msgs) : m.type \in {"FetchRequest", "FetchResponse"}}
    IN  /\ Cardinality(fetches) <= 1
        /\ \A m \in fetches : CopiesIn(m, msgs) <= 1

=============================================================================
