------------------------------ MODULE KRaftReassign ------------------------------
(***************************************************************************)
(* KIP-642 (draft): dynamic quorum reassignment by single-member changes,  *)
(* composed with the KIP-595 protocol of KRaft.tla, and the early KIP-595  *)
(* revision's error code NOT_FOLLOWER and AlterQuorum request.             *)
(*                                                                         *)
(* Composition.  KRaft.tla already computes every rule from VotersOf(i),   *)
(* the voter set of replica i's own log (KRaftLog!VoterSetOf): the         *)
(* CurrentVoters of the last VoterAssignment record it has appended,       *)
(* committed or not, else the bootstrap voters.  This module instantiates  *)
(* KRaft.tla (K), keeps every KIP-595 action under its own name with the   *)
(* bookkeeping of the variables below, and adds the leader's reassignment  *)
(* algorithm (§"Reassignment Algorithm"), the AlterPartitionReassignments  *)
(* request of an administrator (§"AlterPartitionReassignments"), the       *)
(* quorum-state file's committed voter set (§"Changes to Quorum State",    *)
(* §"Bootstrapping Procedure" step 1) and ghost history for the            *)
(* invariants.  NOT_FOLLOWER, the single-voter election and the VoteRequest *)
(* of a non-voter are rules of KRaft.tla itself (reachable only once a     *)
(* VoterAssignment record exists).                                         *)
(*                                                                         *)
(* Hooks.  The configurations substitute (TLC `Op <- [KRaft] Def`) five    *)
(* KRaft.tla operators: VotersOf <- ReassignVotersOf (the in-memory voter  *)
(* set voterSet[i]), MajorityVotersOf, VoteFromNonVoter, NoEndOffsets     *)
(* (the leader tracks every replica's progress: domain Server) and        *)
(* EpochStartRecords (the first leader's bootstrap VoterAssignment).      *)
(* With all Bug* switches FALSE the first three are KRaft.tla's rules on   *)
(* every reachable state: VoterSetFollowsLog checks voterSet[i] = VotersOf *)
(* of the log.  The bug switches of §2 of the reading guide change exactly *)
(* one of them (or one guard of the leader's algorithm).                   *)
(*                                                                         *)
(* Reading guide: docs/spec-reassignment.md.                               *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, Bags, TLC, KRaftLog

CONSTANTS
    Voters, Observers, Values, Nil, LeaderChange, ClusterOf, TimeoutVoters,
    MaxEpoch, MaxLogLength, MaxRestarts, MaxInFlight,
    BugNoCurrentEpochRule, BugNoLogUpToDateCheck, BugVoteNotPersisted,
    BugIgnoreDivergingEpoch, BugAcceptSecondLeader, BugFollowerHwmNotCapped,
    BugObserverVotes, BugNoClusterIdCheck, BugClusterIdFatalFromNonLeader,
    BugSkipFetchValidation

CONSTANTS
    Admin,          \* the administrator's client (AdminClient), a model value
    TargetSets,     \* what the administrator may ask for: TargetVoters (replica
                    \* sets), and NullReplicas where the configuration lets it cancel
    NullReplicas    \* a model value: the request's Replicas set to null
                    \* (§"Cancellation"); a configuration puts it in TargetSets

(***************************************************************************)
(* Reassignment rule switches: each, when TRUE, removes one rule; all      *)
(* FALSE in every configuration but exactly one tlc_configs/reassign-bug-*. *)
(***************************************************************************)
CONSTANTS
    BugChangeBeforeEpochCommit, \* (a) a membership change appended before the
                                \*     leader committed a record of its epoch
    BugTwoChangesInFlight,      \* (b) the next change appended before the
                                \*     previous one is committed
    BugActOnCommit,             \* (c) non-leaders act on a change only once it
                                \*     is committed (not on append)
    BugNoRevertOnTruncate,      \* (d) the voter set is not reverted when the
                                \*     VoterAssignment record is truncated
    BugPersistUncommitted,      \* (e) the quorum-state file persists an
                                \*     uncommitted change (restart recovers it)
    BugVoteForNonVoter,         \* (f) a voter grants its vote to a non-voter
                                \*     (by its own log)
    BugMajorityOfTarget         \* (g) majorities are counted over TargetVoters
                                \*     instead of CurrentVoters

VARIABLES
    currentEpoch, votedId, leaderId, log,
    role, highWatermark, votesGranted, votesRejected,
    followerEndOffset, fetchedSinceCheck,
    msgs, restartCount,
    ghostCommitted, ghostVotes

(***************************************************************************)
(* voterSet[i]     the voter set replica i acts on, kept in memory and      *)
(*                 recomputed from its log whenever the log changes (on    *)
(*                 append: §"Reassignment Algorithm" step 4; on truncation: *)
(*                 the "main subtlety") and on restart (from quorumState).  *)
(* quorumState[i]  PERSISTENT (§"Changes to Quorum State": AppliedOffset,  *)
(*                 CurrentVoters): the last VoterAssignment that i knows to *)
(*                 be committed, [offset |-> its index in log[i], voters |->*)
(*                 its CurrentVoters]; offset 0 = the bootstrap voters.     *)
(*                 "voters will only persist quorum state changes in        *)
(*                 quorum-state after they have been committed".            *)
(* ghostLeaders[e] GHOST: every replica that was ever Leader of epoch e.    *)
(***************************************************************************)
VARIABLES
    voterSet, quorumState, ghostLeaders

\* Kafka 3.7's switches of KRaft.tla (docs/kafka-conformance.md) are off: this module
\* is KIP-642 on KIP-595 (Kafka 3.7 has no reassignment).
K == INSTANCE KRaft WITH KafkaVoteForgottenOnLeader <- FALSE,
                    KafkaCheckQuorumResigns <- FALSE,
                    KafkaResignedRepeatsEndQuorumEpoch <- FALSE,
                    KafkaClusterIdErrorsNotFatal <- FALSE,
                    KafkaRejectedCandidateBacksOff <- FALSE,
                    KafkaLeaderFromVoteResponse <- FALSE,
                    KafkaDivergingFetchNotCounted <- FALSE,
                    KafkaEndOffsetIsLastFetch <- FALSE,
                    KafkaHwmHiddenUntilEpochCommit <- FALSE,
                    KafkaFetchReturnsBatches <- FALSE,
                    KafkaObserverFetchesAnyVoter <- FALSE,
                    KafkaLeaderFlushAdvancesHwm <- FALSE,
                    KafkaObserverLogNotFlushed <- FALSE,
                    KafkaTruncationKeepsUnknownEpoch <- FALSE,
                    KafkaFetchResponseLeaderAndRecordsAtOnce <- FALSE

Server       == K!Server
nodeVars     == <<currentEpoch, votedId, leaderId, log, role, highWatermark,
                  votesGranted, votesRejected, followerEndOffset, fetchedSinceCheck>>
ghostVars    == <<ghostCommitted, ghostVotes>>
vars         == <<nodeVars, msgs, restartCount, ghostVars>>
reassignVars == <<voterSet, quorumState, ghostLeaders>>
allVars      == <<vars, reassignVars>>

ASSUME
    /\ Admin \notin Server \cup {Nil}
    /\ \A T \in TargetSets : T = NullReplicas \/ (T \in SUBSET Server /\ T # {})

(***************************************************************************)
(*                 The hooks substituted into KRaft.tla                    *)
(***************************************************************************)
ReassignVotersOf(i) == voterSet[i]

\* (g) counts majorities over TargetVoters while a reassignment is pending.
ReassignMajorityVotersOf(i) ==
    IF BugMajorityOfTarget /\ TargetOf(log[i]) # NoTarget
    THEN TargetOf(log[i])
    ELSE voterSet[i]

\* §"Reassignment Algorithm": "Each voter must act on the information they
\* have in their own log when deciding whether to grant votes ... Voters
\* must reject votes from non-voters"; (f) drops the rule.
ReassignVoteFromNonVoter(m) == ~BugVoteForNonVoter /\ m.src \notin voterSet[m.dest]

\* The leader tracks the fetch progress of every replica it may need
\* (§"AlterPartitionReassignments Request Handling": "the leader will begin
\* tracking the fetch state of the target voters").
ReassignNoEndOffsets == [v \in Server |-> -1]

(***************************************************************************)
(* §"Bootstrapping Procedure" (last paragraphs): "When a leader has been   *)
(* elected for the first time in a cluster (i.e. if the leader's log is    *)
(* empty), the first thing it will do is append a VoterAssignmentMessage   *)
(* ... which will contain quorum.voters as the initial CurrentVoters.      *)
(* Once this message has been persisted in the log, then we no longer need *)
(* quorum.voters" ... "The leader will also append a LeaderChangeMessage". *)
(* Both in the step that makes it leader, the VoterAssignment FIRST: a     *)
(* Fetch may replicate the first record alone and commit it, and only the  *)
(* draft's order makes every non-empty committed prefix hold the voters    *)
(* (BootstrapAssignmentCommittedFirst; docs/spec-reassignment.md, "what    *)
(* the draft leaves implicit").  TargetVoters = null: nothing is pending.  *)
(***************************************************************************)
BootstrapAssignment(e) == VoterAssignmentRecord(e, Voters, NoTarget)

ReassignEpochStartRecords(l, e) ==
    IF l = << >>
    THEN << BootstrapAssignment(e), [epoch |-> e, value |-> LeaderChange] >>
    ELSE << [epoch |-> e, value |-> LeaderChange] >>

(***************************************************************************)
(*                 Helpers: the leader's view of a reassignment            *)
(***************************************************************************)
VotersOf(i) == K!VotersOf(i)
Target(i)   == TargetOf(log[i])

\* The TargetVoters a leader is working towards; with none pending, its
\* current voters (an AlterPartitionReassignments for them is a no-op).
EffectiveTarget(i) == IF Target(i) = NoTarget THEN VotersOf(i) ELSE Target(i)

\* §"Reassignment Algorithm" step 2.
RemovingVoters(i) == VotersOf(i) \ Target(i)
RetainedVoters(i) == VotersOf(i) \cap Target(i)
NewVoters(i)      == Target(i) \ VotersOf(i)

\* Rule (b), step 4: "Once the record is committed, the membership change is
\* safe to be applied" -- the next change waits for the previous one.
LastAssignmentCommitted(i) == LastAssignmentOffset(log[i]) <= highWatermark[i]

\* Rule (a), the single-server membership change rule of Raft (Ongaro,
\* "bug in single-server membership changes", 2015): a leader changes the
\* membership only once it has committed a record of its own epoch (its
\* LeaderChange record, KIP-595 §"Extra condition on commitment").  The
\* draft leaves it implicit (docs/spec-reassignment.md, findings).
CommittedOwnEpoch(i) ==
    /\ highWatermark[i] > 0
    /\ log[i][highWatermark[i]].epoch = currentEpoch[i]

MayChangeMembership(i) ==
    /\ role[i] = "Leader"
    /\ Target(i) # NoTarget
    /\ BugTwoChangesInFlight \/ LastAssignmentCommitted(i)
    /\ BugChangeBeforeEpochCommit \/ CommittedOwnEpoch(i)

\* Room in the bounded model for one more record appended by a leader
\* (client records and VoterAssignment records share MaxLogLength).
HasRoom(i) == Len(log[i]) < MaxLogLength

AppendAssignment(i, S, T) ==
    log' = [log EXCEPT ![i] = Append(@, VoterAssignmentRecord(currentEpoch[i], S, T))]

(***************************************************************************)
(*        Bookkeeping after every step: voter sets, quorum-state, ghost     *)
(***************************************************************************)
\* The committed prefix of a log under high watermark h.
CommittedPart(l, h) == Prefix(l, Min(h, Len(l)))

\* The step appended a VoterAssignment record to i's log.
AppendedAssignment(i) ==
    /\ Len(log'[i]) > Len(log[i])
    /\ IsVoterAssignment(log'[i][Len(log'[i])])

\* voterSet'[i] after a step in which i did not restart.
NextVoterSet(i) ==
    CASE BugActOnCommit /\ role'[i] # "Leader" ->
            VoterSetOf(CommittedPart(log'[i], highWatermark'[i]), quorumState[i].voters)
      [] log'[i] = log[i] ->
            voterSet[i]
      [] BugNoRevertOnTruncate /\ ~AppendedAssignment(i) ->
            voterSet[i]
      [] OTHER ->
            VoterSetOf(log'[i], Voters)

\* quorumState'[i]: the last committed VoterAssignment, persisted once i's
\* HWM passes it; (e) persists every VoterAssignment as it is appended.
NextQuorumState(i) ==
    IF BugPersistUncommitted
    THEN IF AppendedAssignment(i)
         THEN [offset |-> Len(log'[i]),
               voters |-> log'[i][Len(log'[i])].currentVoters]
         ELSE quorumState[i]
    ELSE LET k == LastAssignmentOffset(CommittedPart(log'[i], highWatermark'[i]))
         IN  IF k > quorumState[i].offset
             THEN [offset |-> k, voters |-> log'[i][k].currentVoters]
             ELSE quorumState[i]

\* GHOST: every replica that is Leader after the step led its epoch.  The
\* domain is the set of epochs that ever had a leader (it grows with them),
\* not 1..MaxEpoch: a trace's ghost then does not depend on the bound, so a
\* checker may raise MaxEpoch (trace_checker's neighbourhood mode).  A
\* bijection with the 1..MaxEpoch form (epochs without a leader map to {}):
\* state counts are the same.
RecordLeaders ==
    LET led == {currentEpoch'[i] : i \in {j \in Server : role'[j] = "Leader"}}
    IN  ghostLeaders' =
            [e \in DOMAIN ghostLeaders \cup led |->
                (IF e \in DOMAIN ghostLeaders THEN ghostLeaders[e] ELSE {}) \cup
                {i \in Server : role'[i] = "Leader" /\ currentEpoch'[i] = e}]

Bookkeeping ==
    /\ voterSet'    = [i \in Server |-> NextVoterSet(i)]
    /\ quorumState' = [i \in Server |-> NextQuorumState(i)]
    /\ RecordLeaders

(***************************************************************************)
(* §"Bootstrapping Procedure" step 1 and the "main subtlety": "Upon        *)
(* initialization, any uncommitted state changes will be found by scanning *)
(* forward from the LastOffset indicated in the quorum-state".             *)
(***************************************************************************)
RecoveredVoterSet(i) ==
    LET qs   == quorumState[i]
        rest == IF qs.offset < Len(log[i]) THEN SubSeq(log[i], qs.offset + 1, Len(log[i]))
                ELSE << >>
    IN  IF BugActOnCommit THEN qs.voters ELSE VoterSetOf(rest, qs.voters)

(***************************************************************************)
(*                                INIT                                     *)
(***************************************************************************)
Init ==
    /\ K!Init
    /\ voterSet     = [i \in Server |-> Voters]
    /\ quorumState  = [i \in Server |-> [offset |-> 0, voters |-> Voters]]
    /\ ghostLeaders = [e \in {} |-> {}]

(***************************************************************************)
(*          KIP-595 actions (KRaft.tla), with the bookkeeping              *)
(***************************************************************************)
Timeout(i)                == K!Timeout(i) /\ Bookkeeping
LeaderProgressTimeout(i)  == K!LeaderProgressTimeout(i) /\ Bookkeeping
ClientRequest(i, v)       == K!ClientRequest(i, v) /\ Bookkeeping
SendVoteRequest(i, j)     == K!SendVoteRequest(i, j) /\ UNCHANGED reassignVars
SendBeginQuorumEpoch(i, j) == K!SendBeginQuorumEpoch(i, j) /\ UNCHANGED reassignVars
SendFetchRequest(i, j)    == K!SendFetchRequest(i, j) /\ UNCHANGED reassignVars
ReceiveVoteRequest        == K!ReceiveVoteRequest /\ Bookkeeping
ReceiveVoteResponse       == K!ReceiveVoteResponse /\ Bookkeeping
ReceiveBeginQuorumEpochRequest  == K!ReceiveBeginQuorumEpochRequest /\ Bookkeeping
ReceiveBeginQuorumEpochResponse == K!ReceiveBeginQuorumEpochResponse /\ Bookkeeping
ReceiveEndQuorumEpochRequest    == K!ReceiveEndQuorumEpochRequest /\ Bookkeeping
ReceiveFetchRequest       == K!ReceiveFetchRequest /\ Bookkeeping
ReceiveFetchResponse      == K!ReceiveFetchResponse /\ Bookkeeping
DropMessage               == K!DropMessage /\ UNCHANGED reassignVars
DuplicateMessage          == K!DuplicateMessage /\ UNCHANGED reassignVars

\* KIP-595 §"Persistent State" with §"Bootstrapping Procedure" step 1: the
\* log and the quorum-state file survive; the voter set is recovered by
\* scanning the log forward from the quorum-state's AppliedOffset.
Restart(i) ==
    /\ K!Restart(i)
    /\ voterSet' = [voterSet EXCEPT ![i] = RecoveredVoterSet(i)]
    /\ UNCHANGED <<quorumState, ghostLeaders>>

(***************************************************************************)
(*            §"AlterPartitionReassignments" (the administrator)           *)
(***************************************************************************)
AdminMessageTypes ==
    {"AlterPartitionReassignmentsRequest", "AlterPartitionReassignmentsResponse"}

AlterRequest(i, T) ==
    [type |-> "AlterPartitionReassignmentsRequest", src |-> Admin, dest |-> i,
     targetVoters |-> T]

AlterResponse(i, T, err) ==
    [type |-> "AlterPartitionReassignmentsResponse", src |-> i, dest |-> Admin,
     targetVoters |-> T, error |-> err, leaderId |-> leaderId[i]]

\* The AdminClient sends (and, after a timeout or NOT_LEADER_OR_FOLLOWER,
\* re-sends: §"AlterPartitionReassignments Response Handling") the request
\* to any replica; it keeps no state the protocol depends on.  Like Kafka's
\* clients it has one request outstanding: it sends when none of its
\* requests or responses is in flight (a lost one counts as timed out).
SendAlterPartitionReassignments(i, T) ==
    /\ T \in TargetSets
    /\ \A m \in BagToSet(msgs) : m.type \notin AdminMessageTypes
    /\ K!Send(AlterRequest(i, T))
    /\ UNCHANGED <<nodeVars, restartCount, ghostVars, reassignVars>>

(***************************************************************************)
(* §"AlterPartitionReassignments Request Handling" steps 1-4 (the early   *)
(* revision's AlterQuorum):                                               *)
(*  1. not the leader: NOT_LEADER_FOR_PARTITION (Kafka's error code 6,     *)
(*     named NOT_LEADER_OR_FOLLOWER today), with the known leader;         *)
(*  2. TargetVoters already the latest assignment's: if committed, return  *)
(*     at once; else go to 4;                                              *)
(*  3. otherwise append VoterAssignment(CurrentVoters = the current voters,*)
(*     TargetVoters = the request's) -- this replaces a pending target;    *)
(*     resubmitting the current voters cancels (§"Cancellation");          *)
(*     §"Cancellation": "If Replicas is set to null in the request, then   *)
(*     effectively we will cancel an ongoing reassignment and leave the    *)
(*     quorum with the current voters": NullReplicas is TargetVoters := the *)
(*     current voters, written as step 6a's "reassignment is done" record  *)
(*     (TargetVoters = null); with nothing pending it is step 2's check;   *)
(*  4. "Return successfully only when the desired TargetVoters has been    *)
(*     safely committed": the request is consumed without a response and   *)
(*     the AdminClient retries until step 2 answers.                      *)
(***************************************************************************)
\* The request asks for what the leader's log already has as its latest
\* assignment (step 2): its TargetVoters, or null for a cancellation.
RequestInForce(i, T) ==
    IF T = NullReplicas THEN Target(i) = NoTarget ELSE T = EffectiveTarget(i)

\* The TargetVoters field of the record step 3 appends.
RequestedTarget(T) == IF T = NullReplicas THEN NoTarget ELSE T

HandleAlterRequest(m) ==
    LET i == m.dest
        T == m.targetVoters
    IN
    /\ role[i] # "Shutdown"
    /\ CASE role[i] # "Leader" ->
              /\ K!Reply(AlterResponse(i, T, "NOT_LEADER_OR_FOLLOWER"), m)
              /\ UNCHANGED nodeVars
         [] RequestInForce(i, T) /\ LastAssignmentCommitted(i) ->
              /\ K!Reply(AlterResponse(i, T, "NONE"), m)
              /\ UNCHANGED nodeVars
         [] RequestInForce(i, T) ->
              /\ K!Discard(m)
              /\ UNCHANGED nodeVars
         [] OTHER ->
              /\ HasRoom(i)
              /\ K!Discard(m)
              /\ AppendAssignment(i, VotersOf(i), RequestedTarget(T))
              /\ UNCHANGED <<currentEpoch, votedId, leaderId, role, highWatermark,
                             votesGranted, votesRejected, followerEndOffset,
                             fetchedSinceCheck>>
    /\ UNCHANGED <<restartCount, ghostVars>>
    /\ Bookkeeping

ReceiveAlterPartitionReassignmentsRequest ==
    \E m \in BagToSet(msgs) :
        m.type = "AlterPartitionReassignmentsRequest" /\ HandleAlterRequest(m)

\* §"AlterPartitionReassignments Response Handling": the AdminClient reads
\* the response (and retries elsewhere on NOT_LEADER_OR_FOLLOWER).
ReceiveAlterPartitionReassignmentsResponse ==
    \E m \in BagToSet(msgs) :
        /\ m.type = "AlterPartitionReassignmentsResponse"
        /\ K!Discard(m)
        /\ UNCHANGED <<nodeVars, restartCount, ghostVars, reassignVars>>

(***************************************************************************)
(*            §"Reassignment Algorithm": the leader's single changes       *)
(***************************************************************************)
LeaderAppendsOnly ==
    UNCHANGED <<currentEpoch, votedId, leaderId, role, highWatermark,
                votesGranted, votesRejected, followerEndOffset, fetchedSinceCheck,
                msgs, restartCount, ghostVars>>

(***************************************************************************)
(* Step 3a: "If size(NewVoters) >= size(RemovingVoters), pick one of       *)
(* NewVoters as NV by writing a record with CurrentVoters=CurrentVoters +  *)
(* NV".  §"Observer Promotion" (leader based): NV must be an up-to-date    *)
(* observer; "caught up" is modelled as: its end offset, as the leader     *)
(* last saw it, has reached the leader's high watermark.                   *)
(***************************************************************************)
AddVoter(i, nv) ==
    /\ MayChangeMembership(i)
    /\ Cardinality(NewVoters(i)) >= Cardinality(RemovingVoters(i))
    /\ nv \in NewVoters(i)
    /\ followerEndOffset[i][nv] >= highWatermark[i]
    /\ HasRoom(i)
    /\ AppendAssignment(i, VotersOf(i) \cup {nv}, Target(i))
    /\ LeaderAppendsOnly
    /\ Bookkeeping

(***************************************************************************)
(* Step 3b: "else pick one of RemovingVoters as RV, preferably a           *)
(* non-leader voter, by writing a record with CurrentVoters=CurrentVoters  *)
(* - RV".  The leader removes itself last (step 6b, below).               *)
(***************************************************************************)
RemoveVoter(i, rv) ==
    /\ MayChangeMembership(i)
    /\ Cardinality(NewVoters(i)) < Cardinality(RemovingVoters(i))
    /\ rv \in RemovingVoters(i) \ {i}
    /\ HasRoom(i)
    /\ AppendAssignment(i, VotersOf(i) \ {rv}, Target(i))
    /\ LeaderAppendsOnly
    /\ Bookkeeping

(***************************************************************************)
(* Step 6a: "If TargetVoters = CurrentVoters, then the reassignment is     *)
(* done.  The leader will append a new entry with TargetVoters=null".     *)
(***************************************************************************)
CompleteReassignment(i) ==
    /\ role[i] = "Leader"
    /\ Target(i) # NoTarget
    /\ VotersOf(i) = Target(i)
    /\ BugTwoChangesInFlight \/ LastAssignmentCommitted(i)
    /\ HasRoom(i)
    /\ AppendAssignment(i, VotersOf(i), NoTarget)
    /\ LeaderAppendsOnly
    /\ Bookkeeping

(***************************************************************************)
(* Step 6b: "If the leader is the last remaining node in RemovingVoters,   *)
(* then it will step down by sending EndQuorumEpoch to the current voters. *)
(* It will continue as a voter until the next leader removes it from the   *)
(* quorum" -- KRaft.tla's Resign (KIP-595 §"EndQuorumEpoch"), once the     *)
(* previous change is committed.                                           *)
(***************************************************************************)
ResignAsLastRemovingVoter(i) ==
    /\ role[i] = "Leader"
    /\ Target(i) # NoTarget
    /\ RemovingVoters(i) = {i}
    /\ NewVoters(i) = {}
    /\ LastAssignmentCommitted(i)
    /\ K!Resign(i)
    /\ Bookkeeping

(***************************************************************************)
(* The leader's high watermark after its own append or a change of its     *)
(* voter set (KIP-595 §"FetchRequest Handling" step 4 computes it on a     *)
(* voter's Fetch; Kafka also recomputes it when the leader's own log end   *)
(* offset moves).  Needed where no Fetch can advance it: a single-voter    *)
(* quorum, or a voter set that lost the member the HWM waited for.         *)
(***************************************************************************)
UpdateHighWatermark(i) ==
    /\ role[i] = "Leader"
    /\ LET h == K!NewHighWatermark(i, followerEndOffset[i])
       IN  /\ h > highWatermark[i]
           /\ highWatermark'  = [highWatermark EXCEPT ![i] = h]
           /\ ghostCommitted' = K!RecordCommitted(i, h)
    /\ UNCHANGED <<currentEpoch, votedId, leaderId, log, role, votesGranted,
                   votesRejected, followerEndOffset, fetchedSinceCheck, msgs,
                   restartCount, ghostVotes>>
    /\ Bookkeeping

(***************************************************************************)
(*                           NEXT AND SPEC                                 *)
(* KRaft.tla's Next without the general Resign (a leader resigns here only *)
(* as the last removing voter), plus the reassignment actions.            *)
(***************************************************************************)
Next ==
    \/ \E i \in Server : Timeout(i)
    \/ \E i \in Server : LeaderProgressTimeout(i)
    \/ \E i \in Server, v \in Values : ClientRequest(i, v)
    \/ \E i \in Server : Restart(i)
    \/ \E i, j \in Server : SendVoteRequest(i, j)
    \/ \E i, j \in Server : SendBeginQuorumEpoch(i, j)
    \/ \E i, j \in Server : SendFetchRequest(i, j)
    \/ ReceiveVoteRequest
    \/ ReceiveVoteResponse
    \/ ReceiveBeginQuorumEpochRequest
    \/ ReceiveBeginQuorumEpochResponse
    \/ ReceiveEndQuorumEpochRequest
    \/ ReceiveFetchRequest
    \/ ReceiveFetchResponse
    \/ DropMessage
    \/ DuplicateMessage
    \* reassignment
    \/ \E i \in Server, T \in TargetSets : SendAlterPartitionReassignments(i, T)
    \/ ReceiveAlterPartitionReassignmentsRequest
    \/ ReceiveAlterPartitionReassignmentsResponse
    \/ \E i, v \in Server : AddVoter(i, v)
    \/ \E i, v \in Server : RemoveVoter(i, v)
    \/ \E i \in Server : CompleteReassignment(i)
    \/ \E i \in Server : ResignAsLastRemovingVoter(i)
    \/ \E i \in Server : UpdateHighWatermark(i)

Spec == Init /\ [][Next]_allVars

(***************************************************************************)
(* Fairness, for the liveness check only: weak fairness on every protocol  *)
(* action, on the administrator's (re)sending of its request and on the    *)
(* delivery of every kind of message on every channel; none on the faults, *)
(* Restart and the leader progress timeout.                               *)
(***************************************************************************)
Deliver(i, j, t) == K!Deliver(i, j, t) /\ Bookkeeping

Fairness ==
    /\ \A i \in Server : WF_allVars(Timeout(i))
    /\ \A i \in Server : \A j \in Server \ {i} :   \* pairs i = j: never enabled (KRaft.tla Fairness)
          /\ WF_allVars(SendVoteRequest(i, j))
          /\ WF_allVars(SendBeginQuorumEpoch(i, j))
          /\ WF_allVars(SendFetchRequest(i, j))
          /\ \A t \in K!MessageTypes : WF_allVars(Deliver(i, j, t))
    /\ \A i \in Server :
          /\ \A T \in TargetSets : WF_allVars(SendAlterPartitionReassignments(i, T))
          /\ WF_allVars(\E v \in Server : AddVoter(i, v))
          /\ WF_allVars(\E v \in Server : RemoveVoter(i, v))
          /\ WF_allVars(CompleteReassignment(i))
          /\ WF_allVars(ResignAsLastRemovingVoter(i))
          /\ WF_allVars(UpdateHighWatermark(i))
    /\ WF_allVars(ReceiveAlterPartitionReassignmentsRequest)
    /\ WF_allVars(ReceiveAlterPartitionReassignmentsResponse)

LiveSpec == Spec /\ Fairness

(***************************************************************************)
(*                              INVARIANTS                                 *)
(***************************************************************************)
ClientOrControlRecord == [epoch : 1..MaxEpoch, value : Values \cup {LeaderChange}]
AssignmentRecord ==
    [epoch : 1..MaxEpoch, value : {"VoterAssignment"},
     currentVoters : (SUBSET Server) \ {{}}, targetVoters : SUBSET Server]

ReassignTypeOK ==
    /\ currentEpoch \in [Server -> 0..MaxEpoch]
    /\ votedId \in [Server -> Server \cup {Nil}]
    /\ leaderId \in [Server -> Server \cup {Nil}]
    /\ \A i \in Server :
          \A k \in 1..Len(log[i]) : log[i][k] \in ClientOrControlRecord \cup AssignmentRecord
    /\ \A i \in Server : Len(log[i]) <= MaxLogLength + MaxEpoch + 1   \* + bootstrap record
    /\ role \in [Server -> K!Roles]
    /\ highWatermark \in [Server -> Nat]
    /\ votesGranted \in [Server -> SUBSET Server]
    /\ votesRejected \in [Server -> SUBSET Server]
    /\ followerEndOffset \in [Server -> [Server -> -1..(MaxLogLength + MaxEpoch + 1)]]
    /\ fetchedSinceCheck \in [Server -> SUBSET Server]
    /\ IsABag(msgs)
    /\ K!NumInFlight <= MaxInFlight
    /\ \A m \in BagToSet(msgs) :
          \/ /\ m.type \in K!MessageTypes
             /\ m.src \in Server /\ m.dest \in Server /\ m.src # m.dest
             /\ m.epoch \in 0..MaxEpoch
             /\ "error" \in DOMAIN m => m.error \in K!ErrorCodes
          \/ /\ m.type = "AlterPartitionReassignmentsRequest"
             /\ m.src = Admin /\ m.dest \in Server /\ m.targetVoters \in TargetSets
          \/ /\ m.type = "AlterPartitionReassignmentsResponse"
             /\ m.src \in Server /\ m.dest = Admin /\ m.targetVoters \in TargetSets
             /\ m.error \in {"NONE", "NOT_LEADER_OR_FOLLOWER"}
    /\ restartCount \in 0..MaxRestarts
    /\ ghostVotes \in [Server -> SUBSET Server]
    /\ voterSet \in [Server -> SUBSET Server]
    /\ quorumState \in [Server -> [offset : 0..(MaxLogLength + MaxEpoch + 1), voters : SUBSET Server]]
    /\ DOMAIN ghostLeaders \subseteq 1..MaxEpoch
    /\ \A e \in DOMAIN ghostLeaders : ghostLeaders[e] \in (SUBSET Server) \ {{}}

\* The records ever committed, in order (the ghost of KRaft.tla).
CommittedEntries == [k \in 1..Len(ghostCommitted) |-> ghostCommitted[k].entry]

\* The committed configuration: the voter set of the last committed
\* VoterAssignment, else the bootstrap voters.
CommittedVoters == VoterSetOf(CommittedEntries, Voters)

SymmetricDifference(A, B) == (A \ B) \cup (B \ A)

\* KIP-595 §"Key Concepts" ("For each epoch there will be only one leader")
\* in the historical sense: no two replicas ever led the same epoch.
ElectionSafety ==
    \A e \in DOMAIN ghostLeaders : Cardinality(ghostLeaders[e]) <= 1

\* Raft's Log Matching and Leader Completeness (KRaft.tla), over every
\* replica that is or becomes a voter.
LogMatching        == K!LogMatching
LeaderCompleteness == K!LeaderCompleteness
HighWatermarkWithinLog == K!HighWatermarkWithinLog
NoDoubleVote       == K!NoDoubleVote
KnownLeadersAgree  == K!KnownLeadersAgree

\* KRaft.tla's LeaderHoldsItsLeaderChange, with the first leader's bootstrap
\* VoterAssignment (§"Bootstrapping Procedure") the one record of its epoch
\* allowed before its LeaderChange record.
LeaderHoldsItsLeaderChange ==
    \A i \in Server : role[i] = "Leader" =>
        \E k \in 1..Len(log[i]) :
            /\ log[i][k] = K!LeaderChangeRecord(currentEpoch[i])
            /\ \A j \in 1..(k - 1) :
                  \/ log[i][j].epoch < currentEpoch[i]
                  \/ j = 1 /\ log[i][j] = BootstrapAssignment(currentEpoch[i])

\* No committed record is ever lost or changed: every record ever committed
\* is still held, at its offset, by a majority of the committed
\* configuration, and no replica's committed prefix disagrees with it.
NoCommittedRecordLostOrChanged ==
    /\ \A k \in 1..Len(ghostCommitted) :
          K!IsMajorityOf({v \in CommittedVoters : /\ k <= Len(log[v])
                                              /\ log[v][k] = ghostCommitted[k].entry},
                       CommittedVoters)
    /\ \A i \in Server :
          \A k \in 1..Min(highWatermark[i], Len(log[i])) :
              /\ k <= Len(ghostCommitted)
              /\ log[i][k] = ghostCommitted[k].entry

\* §"Quorum Change Protocol" 1: "Quorum changes are executed through a
\* series of single-member changes": in every log, each VoterAssignment's
\* CurrentVoters differs from the voter set before it by at most one member.
SingleMemberChanges ==
    \A i \in Server : \A k \in 1..Len(log[i]) :
        IsVoterAssignment(log[i][k]) =>
            Cardinality(SymmetricDifference(
                log[i][k].currentVoters,
                VoterSetOf(SubSeq(log[i], 1, k - 1), Voters))) <= 1

\* The voter sets that two replicas act on differ by at most one member,
\* for replicas that hold the whole committed history (a replica that
\* lags behind the committed configurations is exempt: it cannot win an
\* election, by LeaderCompleteness).  At most one change is in flight.
\* (The replicas holding the committed history are found once, not once per
\* pair: TLC rebuilds CommittedEntries at every use.)
VoterSetsDifferByAtMostOne ==
    LET holders == {i \in Server : IsPrefix(CommittedEntries, log[i])}
    IN  \A i, j \in holders :
            Cardinality(SymmetricDifference(voterSet[i], voterSet[j])) <= 1

\* With the reassignment rules in force the in-memory voter set is the
\* one of the log (§"Reassignment Algorithm" step 4 and its "main
\* subtlety"), so the hooks substituted into KRaft.tla are KRaft.tla's own
\* rules; and the quorum-state file holds a committed assignment.
VoterSetFollowsLog ==
    \A i \in Server :
        /\ voterSet[i] = VoterSetOf(log[i], Voters)
        /\ quorumState[i].offset <= Len(log[i])
        /\ quorumState[i].voters =
              VoterSetOf(SubSeq(log[i], 1, quorumState[i].offset), Voters)
        /\ quorumState[i].offset <= Len(ghostCommitted)

\* §"AlterPartitionReassignments Request Handling" step 4: a successful
\* response only once the TargetVoters it names have been committed (for a
\* cancellation, NullReplicas: a VoterAssignment with TargetVoters = null).
ReassignmentAckedOnlyWhenCommitted ==
    \A m \in BagToSet(msgs) :
        (m.type = "AlterPartitionReassignmentsResponse" /\ m.error = "NONE") =>
            \/ m.targetVoters = Voters
            \/ \E k \in 1..Len(CommittedEntries) :
                  /\ IsVoterAssignment(CommittedEntries[k])
                  /\ RequestedTarget(m.targetVoters) \in
                        {CommittedEntries[k].targetVoters, CommittedEntries[k].currentVoters}

(***************************************************************************)
(* §"Bootstrapping Procedure": "Once this message has been persisted in    *)
(* the log, then we no longer need quorum.voters and users can safely roll *)
(* the cluster without this config."  What protects that: the first record *)
(* ever committed is the bootstrap VoterAssignment, so every replica whose *)
(* high watermark has passed a record holds it in its committed prefix and *)
(* has persisted it in quorum-state (AppliedOffset > 0): a restart then    *)
(* recovers its voters from the quorum-state file and the log, never from  *)
(* quorum.voters.                                                          *)
(***************************************************************************)
BootstrapAssignmentCommittedFirst ==
    /\ Len(ghostCommitted) > 0 =>
          ghostCommitted[1].entry = BootstrapAssignment(ghostCommitted[1].entry.epoch)
    /\ \A i \in Server :
          Min(highWatermark[i], Len(log[i])) > 0 =>
              /\ IsVoterAssignment(log[i][1])
              /\ quorumState[i].offset > 0

\* §"Reassignment Algorithm" step 6a and §"Cancellation": a VoterAssignment
\* with TargetVoters = null (the bootstrap record, a completed or a
\* cancelled reassignment) never changes the membership: its CurrentVoters
\* are the voters before it ("leave the quorum with the current voters").
ClearedTargetKeepsVoters ==
    \A i \in Server : \A k \in 1..Len(log[i]) :
        (IsVoterAssignment(log[i][k]) /\ log[i][k].targetVoters = NoTarget) =>
            log[i][k].currentVoters = VoterSetOf(SubSeq(log[i], 1, k - 1), Voters)

(***************************************************************************)
(* A removed replica never counts toward a majority (action property):     *)
(* a leader's high watermark only advances to an offset held by a majority *)
(* of the leader's current voter set, and a replica becomes leader only    *)
(* with the votes of a majority of its current voter set.                  *)
(***************************************************************************)
HwmHeldByVoters(l) ==
    LET h == highWatermark'[l]
        V == voterSet[l]
    IN  K!IsMajorityOf({v \in V : IF v = l THEN Len(log'[l]) >= h
                                ELSE followerEndOffset'[l][v] >= h}, V)

ElectedByVoters(l) ==
    \/ K!IsMajorityOf({l}, voterSet[l])
    \/ \E m \in BagToSet(msgs) :
          /\ m.type = "VoteResponse" /\ m.dest = l /\ m.voteGranted
          /\ CopiesIn(m, msgs') < CopiesIn(m, msgs)
          /\ K!IsMajorityOf(votesGranted[l] \cup {m.src}, voterSet[l])

RemovedReplicaNeverCounted ==
    [][\A l \in Server :
          /\ (role[l] = "Leader" /\ role'[l] = "Leader"
              /\ highWatermark'[l] > highWatermark[l]) => HwmHeldByVoters(l)
          /\ (role[l] # "Leader" /\ role'[l] = "Leader") => ElectedByVoters(l)]_allVars

(***************************************************************************)
(* §"Reassignment Algorithm": "Each voter must act on the information they *)
(* have in their own log when deciding whether to grant votes ... Voters   *)
(* must reject votes from non-voters" (action property): a vote is only    *)
(* ever granted to a replica in the voter's own voter set.                 *)
(***************************************************************************)
VotesOnlyForVoters ==
    [][\A j \in Server :
          ghostVotes'[j] \ ghostVotes[j] \subseteq voterSet'[j] \cup {j}]_allVars

HighWatermarkMonotonic == K!HighWatermarkMonotonic

(***************************************************************************)
(* Availability: the quorum can still elect a leader.                     *)
(* Without a leader no log changes: only a leader appends, and only its   *)
(* Fetch responses change a follower's log (error NONE or NOT_FOLLOWER, of *)
(* an epoch the follower has not left).  With every rule in force         *)
(* (VoterSetFollowsLog) a replica's voter set is its log's, restarts      *)
(* included, and its vote in a fresh epoch depends on its log alone:       *)
(* KIP-595 §"Vote Request Handling" (the log comparison),                  *)
(* §"Key Concepts" (observers "do not vote"), and KIP-642 §"Reassignment  *)
(* Algorithm" ("Each voter must act on the information they have in their *)
(* own log when deciding whether to grant votes ... Voters must reject     *)
(* votes from non-voters").  So once no replica leads, no Fetch response   *)
(* is in flight and no replica can gather the votes of a majority of its   *)
(* own voter set, no leader is ever elected again, whatever the timers,    *)
(* restarts and the network do: the quorum is unavailable for good.        *)
(***************************************************************************)

\* Replica j would grant c its vote in a fresh epoch.
WouldGrantVote(j, c) ==
    /\ role[j] # "Shutdown"
    /\ K!GrantsVotes(j)
    /\ ~ReassignVoteFromNonVoter([src |-> c, dest |-> j])
    /\ IsUpToDate(LastEpoch(log[c]), Len(log[c]), log[j])

\* The replicas whose votes c has or could get: itself, those that would
\* grant, and (a candidate) the votes granted in its epoch, counted or in
\* flight.
Supporters(c) ==
    {c} \cup {j \in Server \ {c} : WouldGrantVote(j, c)}
        \cup (IF role[c] = "Candidate"
              THEN votesGranted[c] \cup
                   {m.src : m \in {x \in BagToSet(msgs) :
                                     /\ x.type = "VoteResponse" /\ x.dest = c
                                     /\ x.voteGranted /\ x.epoch = currentEpoch[c]}}
              ELSE {})

\* c stands in elections (a voter by its own log) and could win one.
CouldBeElected(c) ==
    /\ role[c] # "Shutdown"
    /\ c \in voterSet[c]
    /\ K!IsElectionQuorumOf(c, Supporters(c))

\* A Fetch response that changes, or may yet change, its receiver's log
\* (KRaft.tla HandleFetchResponse): sent by the leader of an epoch the
\* receiver has not left.  Error responses never change a log.
LogChangeInFlight ==
    \E m \in BagToSet(msgs) :
        /\ m.type = "FetchResponse"
        /\ m.error \in {"NONE", "NOT_FOLLOWER"}
        /\ m.epoch >= currentEpoch[m.dest]

\* Meaningful only with every Bug* switch FALSE (a bug such as (c) or (d)
\* lets a restart change a voter set without a log change).
QuorumCanStillElectALeader ==
    \/ \E i \in Server : role[i] = "Leader"
    \/ LogChangeInFlight
    \/ \E c \in Server : CouldBeElected(c)

(***************************************************************************)
(* The cure (tlc_configs/reassign-finding-cure-any-replica-votes): every   *)
(* replica answers a VoteRequest on its merits whatever its own voter set  *)
(* says, as Raft's servers do (Ongaro's dissertation, ch. 4: a server      *)
(* handles requests without consulting its configuration).  The candidate  *)
(* still asks and counts only the voters of its own set, and a voter still *)
(* rejects a candidate that is not in its set.  Substituted for KRaft.tla's *)
(* GrantsVotes hook; no configuration of the draft as written uses it.     *)
(***************************************************************************)
AnyReplicaVotes(j) == TRUE

(***************************************************************************)
(*                              LIVENESS                                   *)
(* Once the network stops losing and duplicating messages, a requested     *)
(* reassignment eventually completes: a committed VoterAssignment has      *)
(* CurrentVoters = the target and TargetVoters cleared (step 6a).          *)
(***************************************************************************)
NetworkFault == DropMessage \/ DuplicateMessage
NetworkFaultsEventuallyStop == <>[][~NetworkFault]_allVars

ReassignmentDone ==
    LET k == LastAssignmentOffset(CommittedEntries)
    IN  /\ k > 0
        /\ CommittedEntries[k].targetVoters = NoTarget
        /\ CommittedEntries[k].currentVoters \in TargetSets

ReassignmentEventuallyCompletes ==
    NetworkFaultsEventuallyStop => <>ReassignmentDone

=============================================================================
