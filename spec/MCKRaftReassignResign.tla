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

\* RemovingLeaderSpec (a stable quorum led by a RemovingVoter) with the
\* history variable.
ResignWitnessSpec ==
    /\ StableQuorumInit(CHOOSE v \in Voters \ OnlyTarget : TRUE)
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
