---------------------------- MODULE MCKRaftReassign ----------------------------
(***************************************************************************)
(* Model-checking wrapper for KRaftReassign.tla: the clusterId of the      *)
(* replicas (one cluster) and the symmetry set of the configurations       *)
(* tlc_configs/reassign-*.cfg, the state constraints and initial state of  *)
(* the ci shrink / replace configurations, and reachability witnesses.     *)
(***************************************************************************)
EXTENDS KRaftReassign

MCClusterOf == [i \in Server |-> "cluster-A"]

(***************************************************************************)
(* Symmetry for a configuration with a single target set T and every      *)
(* replica's timer enabled: replicas are interchangeable within the four  *)
(* classes bootstrap voter / observer x in T / not in T, and so are the   *)
(* client values.  (Admin and Nil are fixed.)  Never used with liveness.  *)
(***************************************************************************)
\* The replica sets among TargetSets (a cancellation, NullReplicas, aside).
TargetReplicaSets == TargetSets \ {NullReplicas}

TargetSymmetry ==
    IF Cardinality(TargetReplicaSets) = 1 /\ TimeoutVoters = Server
    THEN LET T == CHOOSE t \in TargetReplicaSets : TRUE
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
    IF Cardinality(TargetReplicaSets) = 1
    THEN LET T == CHOOSE t \in TargetReplicaSets : TRUE
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

\* The second message slot (MaxInFlight = 2) serves only the resignation of
\* the leader that is the last RemovingVoter (§"Reassignment Algorithm" step
\* 6b sends EndQuorumEpoch to both other voters at once): a second message
\* is in flight only while an EndQuorumEpoch request is (its loss,
\* duplication and reordering included).  A bound: it only removes behaviours.
SecondSlotForEndQuorumEpoch ==
    \/ K!NumInFlight <= 1
    \/ \E m \in BagToSet(msgs) : m.type = "EndQuorumEpochRequest"

\* Witness bound (reassign-ci-witness-cancel): of the observers only one
\* (CHOOSE) sends or receives messages, the others stay idle.  A bound: it
\* only removes behaviours.  Not symmetric: no SYMMETRY with it.
OneObserverActive ==
    LET o == CHOOSE x \in Observers : TRUE
    IN  \A m \in BagToSet(msgs) : {m.src, m.dest} \cap (Observers \ {o}) = {}

(***************************************************************************)
(* Initial state of the ci reassignment configurations: a stable quorum    *)
(* (KIP-595) before the administrator's request -- StableLeader, one of    *)
(* the bootstrap voters, leads epoch 1 with the votes of every voter, and  *)
(* every voter holds and has committed the first leader's records: the     *)
(* bootstrap VoterAssignment (CurrentVoters = quorum.voters, persisted in  *)
(* quorum-state, §"Bootstrapping Procedure") and the LeaderChange; observers *)
(* have not fetched yet.  A reachable state of Spec (reassign-ci-grow and  *)
(* reassign-ci-liveness check the election from the empty Init), so every  *)
(* behaviour from it is a behaviour of Spec.  Two choices of the leader:   *)
(* a RemovingVoter (it must remove itself last, step 6b) or a retained     *)
(* voter (one of the single target set's).                                 *)
(***************************************************************************)
OnlyTarget == CHOOSE t \in TargetReplicaSets : TRUE

StableQuorumInit(l) ==
    LET ba == BootstrapAssignment(1)
        lc == [epoch |-> 1, value |-> LeaderChange]
    IN
    /\ currentEpoch = [i \in Server |-> IF i \in Voters THEN 1 ELSE 0]
    /\ votedId      = [i \in Server |-> IF i \in Voters THEN l ELSE Nil]
    /\ leaderId     = [i \in Server |-> IF i \in Voters THEN l ELSE Nil]
    /\ log          = [i \in Server |-> IF i \in Voters THEN <<ba, lc>> ELSE << >>]
    /\ role         = [i \in Server |-> IF i = l THEN "Leader"
                                        ELSE IF i \in Voters THEN "Follower"
                                        ELSE "Unattached"]
    /\ highWatermark = [i \in Server |-> IF i \in Voters THEN 2 ELSE 0]
    /\ votesGranted  = [i \in Server |-> {}]
    /\ votesRejected = [i \in Server |-> {}]
    /\ followerEndOffset = [i \in Server |->
                              [v \in Server |-> IF i = l /\ v \in Voters \ {l} THEN 2 ELSE -1]]
    /\ fetchedSinceCheck = [i \in Server |-> {}]
    /\ msgs          = EmptyBag
    /\ restartCount  = 0
    /\ ghostCommitted = << [entry |-> ba, epoch |-> 1], [entry |-> lc, epoch |-> 1] >>
    /\ ghostVotes    = [i \in Server |-> IF i \in Voters THEN {l} ELSE {}]
    /\ voterSet      = [i \in Server |-> Voters]
    /\ quorumState   = [i \in Server |-> IF i \in Voters THEN [offset |-> 1, voters |-> Voters]
                                        ELSE [offset |-> 0, voters |-> Voters]]
    /\ ghostLeaders  = [e \in {1} |-> {l}]

RemovingLeaderSpec ==
    StableQuorumInit(CHOOSE v \in Voters \ OnlyTarget : TRUE) /\ [][Next]_allVars
RetainedLeaderSpec ==
    StableQuorumInit(CHOOSE v \in Voters \cap OnlyTarget : TRUE) /\ [][Next]_allVars

(***************************************************************************)
(* Reachability witnesses: invariants that a ci witness configuration      *)
(* EXPECTS to be violated, so that a bound which silently made the path    *)
(* unreachable fails the suite (as MCKRaft's NoEndQuorumEpochSent).        *)
(***************************************************************************)
\* §"Reassignment Algorithm" step 6b: the leader, the last RemovingVoter,
\* resigns (this Next has no other Resign).
NoEndQuorumEpochSent ==
    \A m \in BagToSet(msgs) : m.type # "EndQuorumEpochRequest"

\* Step 5 / early revision NOT_FOLLOWER: a replica that once led an epoch
\* is told by a later leader that its removal is committed.
NoFormerLeaderToldNotFollower ==
    \A m \in BagToSet(msgs) :
        ~(/\ m.type = "FetchResponse" /\ m.error = "NOT_FOLLOWER"
          /\ \E e \in DOMAIN ghostLeaders : m.dest \in ghostLeaders[e] /\ e < m.epoch)

\* Step 5: a removed voter is told NOT_FOLLOWER.
NoNotFollowerSent ==
    \A m \in BagToSet(msgs) : ~(m.type = "FetchResponse" /\ m.error = "NOT_FOLLOWER")

\* §"Cancellation": a cancellation (Replicas = null) in the middle of a
\* reassignment completes -- the administrator is told NONE while the
\* committed voters are neither the bootstrap voters nor a requested
\* target, and the latest committed assignment has TargetVoters = null with
\* those voters (ClearedTargetKeepsVoters: the voters at the time of the
\* cancellation).
NoCancellationCompletedMidReassignment ==
    \A m \in BagToSet(msgs) :
        ~(/\ m.type = "AlterPartitionReassignmentsResponse"
          /\ m.targetVoters = NullReplicas /\ m.error = "NONE"
          /\ CommittedVoters \notin {Voters} \cup TargetReplicaSets
          /\ CommittedEntries[LastAssignmentOffset(CommittedEntries)].targetVoters = NoTarget)

=============================================================================
