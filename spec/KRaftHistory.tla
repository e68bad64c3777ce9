------------------------------ MODULE KRaftHistory ------------------------------
(***************************************************************************)
(* KRaft.tla composed with (1) the history of elections, a ghost map from  *)
(* each epoch to the replicas that were ever its Leader, for the           *)
(* historical form of election safety, and (2) the loss of a replica's     *)
(* disk, the fault KIP-595 §"Cluster Bootstrapping" names: "a broker with  *)
(* empty state is started with the ID of an existing voter, which can lead *)
(* to correctness violations".                                             *)
(*                                                                         *)
(* Both live here, not in KRaft.tla, so that the reachable states of the   *)
(* plain protocol (KRaft.tla's Spec, the pinned ci counts and the trace    *)
(* checker's graphs) stay what they are: the ghost map distinguishes      *)
(* states that KRaft.tla identifies (who led an epoch whose records have  *)
(* since been truncated everywhere).  Every KRaft.tla action is a step of  *)
(* HistorySpec; LoseDisk is the only new action.  Reading guide:           *)
(* docs/spec-kraft.md (§4, §8).                                            *)
(***************************************************************************)
EXTENDS KRaft

(***************************************************************************)
(* When may a replica come back with an empty disk?                        *)
(*   "Never"         no disk loss (the history-only configurations);       *)
(*   "Any"           at any moment (KIP-595's "broker with empty state");   *)
(*   "AfterNewLeader" only once another voter leads an epoch the replica    *)
(*                   never saw and every other replica is in that epoch     *)
(*                   and knows that leader (Kafka's RaftEventSimulationTest *)
(*                   canRecoverFromSingleNodeCommittedDataLoss: "as long as *)
(*                   a new leader is elected before the failed node is      *)
(*                   restarted"; it waits for hasConsistentLeader);         *)
(*   "AfterNewLeaderCommitted" as AfterNewLeader, and that leader has       *)
(*                   committed a record of its epoch (so every committed    *)
(*                   record is again on a majority that excludes the        *)
(*                   replica).                                              *)
(* Disk losses count as restarts (restartCount <= MaxRestarts).             *)
(***************************************************************************)
CONSTANT DiskLossRejoin

ASSUME DiskLossRejoin \in {"Never", "Any", "AfterNewLeader", "AfterNewLeaderCommitted"}

VARIABLE
    ghostLeaders    \* GHOST: epoch -> every replica that was ever Leader of
                    \* it, over the epochs that ever had a leader

historyVars == <<vars, ghostLeaders>>

HistoryInit ==
    /\ Init
    /\ ghostLeaders = [e \in {} |-> {}]

(***************************************************************************)
(* A new leader l, elected in an epoch replica i never reached, that every *)
(* other replica follows in that epoch; with committed, l's HWM            *)
(* has passed its own LeaderChange record (KIP-595 §"Extra condition on   *)
(* commitment": the whole log before it is then on a majority of the      *)
(* voters, none of which is i, since i never reached the epoch).           *)
(***************************************************************************)
NewLeaderWithout(i, committed) ==
    \E l \in Voters \ {i} :
        /\ role[l] = "Leader"
        /\ currentEpoch[l] > currentEpoch[i]
        /\ \A v \in Server \ {i} :
              currentEpoch[v] = currentEpoch[l] /\ leaderId[v] = l
        /\ committed =>
              /\ highWatermark[l] > 0
              /\ log[l][highWatermark[l]].epoch = currentEpoch[l]

MayLoseDisk(i) ==
    CASE DiskLossRejoin = "Never"          -> FALSE
      [] DiskLossRejoin = "Any"            -> TRUE
      [] DiskLossRejoin = "AfterNewLeader" -> NewLeaderWithout(i, FALSE)
      [] OTHER                             -> NewLeaderWithout(i, TRUE)

(***************************************************************************)
(* KIP-595 §"Cluster Bootstrapping" ("a broker with empty state is started *)
(* with the ID of an existing voter") and §"Persistent State": replica i   *)
(* crashes, loses its log and its quorum-state file, and restarts as a     *)
(* freshly formatted replica: epoch 0, no vote, no leader, empty log,      *)
(* Unattached.  Its cached clusterId is kept (the operator formats it for *)
(* the same cluster, so clusterId validation cannot tell).  The same       *)
(* bound as Restart: a leader of MaxEpoch does not crash.  Its ghost votes *)
(* are for epoch currentEpoch[i], which it no longer knows, so they are    *)
(* cleared like on any move to another epoch: a vote it casts again in an  *)
(* old epoch is not a NoDoubleVote violation; what it breaks is seen in    *)
(* the election history and the committed data.                           *)
(***************************************************************************)
LoseDisk(i) ==
    /\ MayLoseDisk(i)
    /\ restartCount < MaxRestarts
    /\ role[i] # "Shutdown"
    /\ leaderId[i] = i => currentEpoch[i] < MaxEpoch
    /\ currentEpoch'      = [currentEpoch      EXCEPT ![i] = 0]
    /\ votedId'           = [votedId           EXCEPT ![i] = Nil]
    /\ leaderId'          = [leaderId          EXCEPT ![i] = Nil]
    /\ log'               = [log               EXCEPT ![i] = << >>]
    /\ role'              = [role              EXCEPT ![i] = "Unattached"]
    /\ highWatermark'     = [highWatermark     EXCEPT ![i] = 0]
    /\ votesGranted'      = [votesGranted      EXCEPT ![i] = {}]
    /\ votesRejected'     = [votesRejected     EXCEPT ![i] = {}]
    /\ followerEndOffset' = [followerEndOffset EXCEPT ![i] = NoEndOffsets]
    /\ fetchedSinceCheck' = [fetchedSinceCheck EXCEPT ![i] = {}]
    /\ restartCount'      = restartCount + 1
    /\ ghostVotes'        = [ghostVotes        EXCEPT ![i] = {}]
    /\ UNCHANGED <<msgs, ghostCommitted>>

\* GHOST: every replica that is Leader after the step is recorded as a
\* leader of its epoch.  The domain is the set of epochs that ever had a
\* leader (it grows with them), not 1..MaxEpoch: a trace's ghost then does
\* not depend on the bound, so a checker may raise MaxEpoch (trace_checker's
\* neighbourhood mode; the Kafka bridge computes the ghost of Kafka's
\* disk-loss traces, docs/kafka-conformance.md).  A bijection with the
\* 1..MaxEpoch form (epochs without a leader map to {}): state counts are
\* the same.  As KRaftReassign.tla's RecordLeaders.
RecordLeaders ==
    LET led == {currentEpoch'[i] : i \in {j \in Server : role'[j] = "Leader"}}
    IN  ghostLeaders' =
            [e \in DOMAIN ghostLeaders \cup led |->
                (IF e \in DOMAIN ghostLeaders THEN ghostLeaders[e] ELSE {}) \cup
                {i \in Server : role'[i] = "Leader" /\ currentEpoch'[i] = e}]

\* One line, parenthesised: trace_checker reads the disjuncts (Next's actions and
\* LoseDisk) and takes each with RecordLeaders (coverage._alternatives), since TLC
\* labels every edge of this conjunction HistoryNext.
HistoryNext ==
    (Next \/ \E i \in Server : LoseDisk(i)) /\ RecordLeaders

HistorySpec == HistoryInit /\ [][HistoryNext]_historyVars

(***************************************************************************)
(*                              INVARIANTS                                 *)
(***************************************************************************)
HistoryTypeOK ==
    /\ TypeOK
    /\ DOMAIN ghostLeaders \subseteq 1..MaxEpoch
    /\ \A e \in DOMAIN ghostLeaders : ghostLeaders[e] \in (SUBSET Voters) \ {{}}

\* KIP-595 §"Key Concepts": "For each epoch there will be only one leader",
\* over the whole behaviour: no two replicas ever led the same epoch.
ElectionSafety ==
    \A e \in DOMAIN ghostLeaders : Cardinality(ghostLeaders[e]) <= 1

\* A known leader of an epoch was elected in that epoch: the (epoch,
\* leader) pairs the replicas learn from one another (BeginQuorumEpoch,
\* EndQuorumEpoch, piggybacked responses) all come from a real election.
KnownLeaderWasElected ==
    \A i \in Server : leaderId[i] # Nil =>
        /\ currentEpoch[i] \in DOMAIN ghostLeaders
        /\ leaderId[i] \in ghostLeaders[currentEpoch[i]]

\* KRaft.tla's HighWatermarkMonotonic applies unchanged: LoseDisk(i) is a
\* RestartOf(i) that resets i's HWM to 0.

=============================================================================
