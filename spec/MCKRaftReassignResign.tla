------------------------- MODULE MCKRaftReassignResign -------------------------
(***************************************************************************)
(* Model-checking wrapper with one history variable, for ONE witness:      *)
(* KIP-642 §"Reassignment Algorithm" step 6b ("If the leader is the last   *)
(* remaining node in RemovingVoters, then it will step down by sending     *)
(* EndQuorumEpoch to the current voters.  It will continue as a voter      *)
(* until the next leader removes it from the quorum") and step 5 / the     *)
(* early revision's NOT_FOLLOWER, in one behaviour: the leader resigns,    *)
(* the next leader removes it and tells it NOT_FOLLOWER.                   *)
(*                                                                         *)
(* MCKRaftReassign's NoFormerLeaderToldNotFollower does not say that: a    *)
(* former leader may also be removed after losing an election it never     *)
(* resigned from.  The history variable resignedLeaders (every replica     *)
(* that resigned; this Next's only Resign is ResignAsLastRemovingVoter)    *)
(* lives here, not in KRaftReassign.tla, so no other configuration and no  *)
(* trace carries it.                                                       *)
(***************************************************************************)
EXTENDS MCKRaftReassign

VARIABLE resignedLeaders

ResignedInStep == {i \in Server : role[i] = "Leader" /\ role'[i] = "Resigned"}

(***************************************************************************)
(* Initial state: StableQuorumInit(l) a little later -- the administrator's *)
(* request for OnlyTarget has been handled (no message in flight), and its *)
(* TargetVoters record VoterAssignment(Voters, OnlyTarget) replicated to,  *)
(* committed by and persisted in quorum-state at every voter (HWM 3, the   *)
(* leader's end offsets of the others 3).  A reachable state of            *)
(* RemovingLeaderSpec (the admin's Send and the leader's handling, then    *)
(* two rounds of Fetch by each voter), so its behaviours are behaviours    *)
(* of Spec; it skips the prefix reassign-ci-shrink already explores.      *)
(***************************************************************************)
TargetCommittedInit(l) ==
    LET L == << BootstrapAssignment(1), [epoch |-> 1, value |-> LeaderChange],
               VoterAssignmentRecord(1, Voters, OnlyTarget) >>
    IN
    /\ currentEpoch = [i \in Server |-> IF i \in Voters THEN 1 ELSE 0]
    /\ votedId      = [i \in Server |-> IF i \in Voters THEN l ELSE Nil]
    /\ leaderId     = [i \in Server |-> IF i \in Voters THEN l ELSE Nil]
    /\ log          = [i \in Server |-> IF i \in Voters THEN L ELSE << >>]
    /\ role         = [i \in Server |-> IF i = l THEN "Leader"
                                        ELSE IF i \in Voters THEN "Follower"
                                        ELSE "Unattached"]
    /\ highWatermark = [i \in Server |-> IF i \in Voters THEN 3 ELSE 0]
    /\ votesGranted  = [i \in Server |-> {}]
    /\ votesRejected = [i \in Server |-> {}]
    /\ followerEndOffset = [i \in Server |->
                              [v \in Server |-> IF i = l /\ v \in Voters \ {l} THEN 3 ELSE -1]]
    /\ fetchedSinceCheck = [i \in Server |-> {}]
    /\ msgs          = EmptyBag
    /\ restartCount  = 0
    /\ ghostCommitted = [k \in 1..3 |-> [entry |-> L[k], epoch |-> 1]]
    /\ ghostVotes    = [i \in Server |-> IF i \in Voters THEN {l} ELSE {}]
    /\ voterSet      = [i \in Server |-> Voters]
    /\ quorumState   = [i \in Server |-> IF i \in Voters THEN [offset |-> 3, voters |-> Voters]
                                        ELSE [offset |-> 0, voters |-> Voters]]
    /\ ghostLeaders  = [e \in {1} |-> {l}]

\* From there, with the history variable: the leader l is the only
\* RemovingVoter (Voters \ OnlyTarget = {l}, as in reassign-ci-shrink).
ResignWitnessSpec ==
    /\ TargetCommittedInit(CHOOSE v \in Voters \ OnlyTarget : TRUE)
    /\ resignedLeaders = {}
    /\ [][Next /\ resignedLeaders' = resignedLeaders \cup ResignedInStep]_<<allVars, resignedLeaders>>

\* State constraint (a bound: it only removes behaviours): no election
\* before the leader's resignation -- the behaviours in which epoch 1 ends
\* otherwise are not the ones this witness is about.
NoElectionBeforeResignation ==
    \A i \in Server : currentEpoch[i] > 1 => resignedLeaders # {}

\* The witness (expected to be violated): a replica that resigned as the
\* last RemovingVoter is told NOT_FOLLOWER by a later leader, which has
\* committed its removal.
NoResignedLeaderToldNotFollower ==
    \A m \in BagToSet(msgs) :
        ~(/\ m.type = "FetchResponse" /\ m.error = "NOT_FOLLOWER"
          /\ m.dest \in resignedLeaders)

=============================================================================
