---------------------------------- MODULE KRaft ----------------------------------
(***************************************************************************)
(* KIP-595: A Raft Protocol for the Metadata Quorum (KRaft), as specified  *)
(* in the KIP ("KIP-595: A Raft Protocol for the Metadata Quorum") and in  *)
(* its later revision on cluster bootstrapping and the leader progress     *)
(* timeout (the same KIP page, sections "Cluster Bootstrapping" and        *)
(* "Leader Progress Timeout").                                             *)
(*                                                                         *)
(* Scope: leader election (Vote, BeginQuorumEpoch, EndQuorumEpoch), the    *)
(* pull-based log replication with its reconciliation (Fetch with          *)
(* LastFetchedEpoch / DivergingEpoch), the high watermark with the KIP's   *)
(* "extra condition on commitment", the leader progress timeout, clusterId *)
(* validation, observers, crash/restart with the quorum-state file, and a  *)
(* network that loses, duplicates and reorders messages.  Out of scope:    *)
(* DescribeQuorum (read-only), snapshots (KIP-630).                       *)
(*                                                                         *)
(* Voter sets (KIP-642).  Every rule uses VotersOf(i), the voter set       *)
(* replica i acts on: the CurrentVoters of the last VoterAssignment record *)
(* in its own log, else the bootstrap voters Voters (KRaftLog!VoterSetOf). *)
(* This module never appends a VoterAssignment record, so VotersOf(i) =    *)
(* Voters in all its behaviours; KRaftReassign.tla adds the reassignment   *)
(* actions that do (reading guide: docs/spec-reassignment.md).            *)
(*                                                                         *)
(* Reading guide: docs/spec-kraft.md.  This module contains no model-      *)
(* checking artefacts: bounds are CONSTANTS that the actions respect as    *)
(* guards (so a simulator can run the same bounded model), and symmetry /  *)
(* configuration live in MCKRaft.tla and tlc_configs/kraft-*.cfg.          *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, Bags, TLC, KRaftLog

(***************************************************************************)
(*                              CONSTANTS                                  *)
(***************************************************************************)
CONSTANTS
    Voters,         \* quorum.voters: the bootstrap voters (KIP-642: the voter
                    \* set until a VoterAssignment record says otherwise)
    Observers,      \* replicas that only fetch (never vote, never lead)
    Values,         \* client record values (model values)
    Nil,            \* "-1": no leader / no vote
    LeaderChange,   \* value of the LeaderChange control record (Type=3)
    ClusterOf,      \* [Server -> cluster id]: clusterId cached in meta.properties
    TimeoutVoters   \* replicas whose election / fetch timer may fire while they
                    \* are voters (see below)

(***************************************************************************)
(* Bounds.  Each is a guard on the actions that would exceed it, so every  *)
(* behaviour of the bounded model is a behaviour of the unbounded protocol *)
(* (the bounds only remove behaviours).                                    *)
(***************************************************************************)
CONSTANTS
    MaxEpoch,       \* no election (Timeout, progress timeout, EndQuorumEpoch)
                    \* starts an epoch > MaxEpoch; a leader in MaxEpoch does
                    \* not crash or resign (nobody could replace it).
    MaxLogLength,   \* a leader appends a client record only while its log is
                    \* shorter than this.  LeaderChange records are exempt, so
                    \* Len(log[i]) <= MaxLogLength + MaxEpoch.
    MaxRestarts,    \* total number of crash/restarts in a behaviour
    MaxInFlight     \* at most this many messages (with multiplicity) in the
                    \* network; a send that would exceed it is not taken yet

(***************************************************************************)
(* Protocol-rule switches.  Each one, when TRUE, removes exactly one rule  *)
(* of the KIP; they are all FALSE in the normal configurations and exactly *)
(* one is TRUE in each tlc_configs/kraft-bug-*.cfg.                        *)
(***************************************************************************)
CONSTANTS
    BugNoCurrentEpochRule,   \* HWM may advance without a record of the
                             \* leader's epoch being on a majority
    BugNoLogUpToDateCheck,   \* Vote granted without the log comparison
    BugVoteNotPersisted,     \* votedId is lost on restart
    BugIgnoreDivergingEpoch, \* follower ignores DivergingEpoch, treats the
                             \* response as a successful fetch
    BugAcceptSecondLeader,   \* BeginQuorumEpoch from a second leader of an
                             \* already-known epoch is accepted
    BugFollowerHwmNotCapped, \* follower takes the leader's HWM uncapped by
                             \* its own log end offset
    BugObserverVotes,        \* observers are asked for, grant and count votes
    BugNoClusterIdCheck,     \* clusterId is not validated by any request
    BugClusterIdFatalFromNonLeader, \* INVALID_CLUSTER_ID in a FetchResponse
                             \* is fatal even if the responder is not the
                             \* elected leader (the KIP's literal step 1a)
    BugSkipFetchValidation   \* leader serves records without validating
                             \* FetchOffset / LastFetchedEpoch

(***************************************************************************)
(* Kafka 3.7 switches (docs/kafka-conformance.md).  Each, when TRUE, makes *)
(* one rule behave as Apache Kafka 3.7.2's KafkaRaftClient does where it   *)
(* differs from this module's reading of KIP-595.  They are FALSE in every *)
(* configuration except the kafka-3.7 judges (tlc_configs/*kafka-3.7*.cfg) *)
(* and the kraft-ci-kafka-* / kraft-deep-kafka-* configurations that       *)
(* model-check one deviation each (with their *-witness-kafka-* siblings). *)
(* With all of them FALSE this module is unchanged: every guard below is   *)
(* "Kafka* => ...", "IF Kafka* ..." or a set that is a singleton without   *)
(* them (RestartLogLengths).                                               *)
(***************************************************************************)
CONSTANTS
    KafkaVoteForgottenOnLeader,   \* the quorum-state file keeps votedId only
                                  \* while no leader is known (ElectionState.
                                  \* withElectedLeader); a follower grants no
                                  \* vote, not even again to its leader
    KafkaCheckQuorumResigns,      \* the leader progress timeout (check quorum)
                                  \* makes the leader Resigned, not a candidate
    KafkaResignedRepeatsEndQuorumEpoch, \* a Resigned leader (also after a
                                  \* restart, with no successors) re-sends
                                  \* EndQuorumEpoch until answered; every
                                  \* receiver answers and only steps down (the
                                  \* first successor's timer fires at once)
    KafkaClusterIdErrorsNotFatal, \* INCONSISTENT_CLUSTER_ID is a top-level
                                  \* error answer and a retry: never fatal, and
                                  \* not a vote rejection
    KafkaRejectedCandidateBacksOff, \* a candidate whose election cannot be won
                                  \* stays Candidate (backing off), sends no
                                  \* more Vote requests, until its timer fires
    KafkaLeaderFromVoteResponse,  \* a VoteResponse of the current epoch naming
                                  \* a leader makes a leaderless replica its
                                  \* follower (maybeHandleCommonResponse)
    KafkaDivergingFetchNotCounted, \* a Fetch answered with DivergingEpoch is
                                  \* neither an endorsement nor counted by the
                                  \* check-quorum window
    KafkaEndOffsetIsLastFetch,    \* the leader records a voter's end offset as
                                  \* its last valid FetchOffset (may go down)
    KafkaHwmHiddenUntilEpochCommit, \* a new leader answers Fetch with HWM -1
                                  \* until it has committed in its own epoch
    KafkaFetchReturnsBatches,     \* a Fetch is answered with the records from
                                  \* FetchOffset to any later offset of the
                                  \* leader's log (Kafka: up to 2 batches in
                                  \* MockLog, up to 8 MiB on disk)
    KafkaObserverFetchesAnyVoter, \* an observer following a leader may send a
                                  \* Fetch to any voter (leader unreachable)
    KafkaLeaderFlushAdvancesHwm,  \* the leader recomputes its HWM when its own
                                  \* log end offset moves (a single voter
                                  \* commits without any Fetch)
    KafkaObserverLogNotFlushed,   \* an observer never flushes its log: its
                                  \* Restart may keep any prefix of it
    KafkaTruncationKeepsUnknownEpoch, \* a follower lacking DivergingEpoch.Epoch
                                  \* truncates to the end of its own largest
                                  \* epoch below it, ignoring EndOffset
    KafkaFetchResponseLeaderAndRecordsAtOnce \* a FetchResponse (NONE) naming
                                  \* a leader its leaderless fetcher did not
                                  \* know makes it follow AND appends its
                                  \* records in the same step

Server == Voters \cup Observers

(***************************************************************************)
(* Timing abstraction.  The KIP's timers (quorum.fetch.timeout.ms,         *)
(* quorum.election.timeout.ms, the randomised election back-off and the    *)
(* EndQuorumEpoch back-off) are not modelled as clocks: a timer may expire *)
(* at any moment, which is nondeterminism.  TimeoutVoters is the set of    *)
(* voters whose timers may expire; it is Voters in every safety            *)
(* configuration.  The liveness configuration uses a single voter: this    *)
(* models the randomised back-off (KIP-595 §"Vote", "New elections are     *)
(* always delayed by a random time ... to prevent gridlocked elections")   *)
(* eventually letting one voter's timer fire first.                        *)
(***************************************************************************)
ASSUME
    /\ Voters \cap Observers = {}
    /\ Voters # {}
    /\ TimeoutVoters \subseteq Server
    /\ Nil \notin Server /\ LeaderChange \notin Values
    /\ ClusterOf \in [Server -> STRING]
    /\ MaxEpoch \in Nat /\ MaxLogLength \in Nat
    /\ MaxRestarts \in Nat /\ MaxInFlight \in Nat \ {0}

(***************************************************************************)
(*                              VARIABLES                                  *)
(*                                                                         *)
(* Persistent: survive Restart (KIP-595 §"Persistent State").             *)
(*   currentEpoch[i]  LeaderEpoch of the quorum-state file; 0 initially.   *)
(*   votedId[i]       VotedId of the quorum-state file: the candidate i    *)
(*                    voted for in currentEpoch[i], or Nil.                *)
(*   leaderId[i]      LeaderId of the quorum-state file: the leader of     *)
(*                    currentEpoch[i] as known to i, or Nil.               *)
(*   log[i]           the metadata log: Seq of [epoch |-> e, value |-> v], *)
(*                    v \in Values, or v = LeaderChange for the control    *)
(*                    record a new leader appends.  Appends are fsynced.   *)
(*                                                                         *)
(* Volatile: lost on Restart.                                              *)
(*   role[i]          "Unattached" | "Voted" | "Candidate" | "Leader" |    *)
(*                    "Follower" | "Resigned" | "Shutdown" (a fatal        *)
(*                    INVALID_CLUSTER_ID stopped the broker; terminal).    *)
(*   highWatermark[i] i's high watermark (an offset: l[1..hwm] committed). *)
(*   votesGranted[i]  Candidate: voters that granted i's vote (incl. i).   *)
(*   votesRejected[i] Candidate: voters that rejected i's vote.            *)
(*   followerEndOffset[i] Leader: [Voters -> Int], for each other voter    *)
(*                    the largest end offset it is known to share with the *)
(*                    leader's log, or -1 if it has not endorsed the leader*)
(*                    yet (so BeginQuorumEpoch is still to be sent to it). *)
(*                    The -1 convention is DescribeQuorum's LogEndOffset.  *)
(*   fetchedSinceCheck[i] Leader: voters whose Fetch arrived in the        *)
(*                    current leader-progress window (see                  *)
(*                    LeaderProgressTimeout).                              *)
(*                                                                         *)
(* Environment:                                                            *)
(*   msgs             the network: a bag (multiset) of messages, i.e. a    *)
(*                    function from message records to copy counts.       *)
(*   restartCount     number of Restart steps taken so far (<= MaxRestarts)*)
(*                                                                         *)
(* GHOST (history only, read by invariants, never by the protocol):        *)
(*   ghostCommitted   Seq of [entry |-> record, epoch |-> e]: the longest  *)
(*                    prefix any leader ever committed, each record tagged *)
(*                    with the epoch of the leader that committed it.      *)
(*   ghostVotes[i]    the set of candidates i has voted for in epoch       *)
(*                    currentEpoch[i] (its vote for itself included).      *)
(*                    Unlike votedId it survives crashes.  Votes of older  *)
(*                    epochs are not kept: a replica only votes in its     *)
(*                    current epoch, and epochs never decrease, so a       *)
(*                    second vote in an epoch can only happen while that   *)
(*                    epoch is current (TypeOK checks the epoch stays).    *)
(***************************************************************************)
VARIABLES
    currentEpoch, votedId, leaderId, log,
    role, highWatermark, votesGranted, votesRejected,
    followerEndOffset, fetchedSinceCheck,
    msgs, restartCount,
    ghostCommitted, ghostVotes

persistentVars == <<currentEpoch, votedId, leaderId, log>>
quorumVars     == <<currentEpoch, votedId, leaderId>>
candidateVars  == <<votesGranted, votesRejected>>
leaderVars     == <<followerEndOffset, fetchedSinceCheck>>
ghostVars      == <<ghostCommitted, ghostVotes>>
nodeVars       == <<currentEpoch, votedId, leaderId, log, role, highWatermark,
                    votesGranted, votesRejected, followerEndOffset,
                    fetchedSinceCheck>>
vars           == <<nodeVars, msgs, restartCount, ghostVars>>

(***************************************************************************)
(*                        HELPERS: quorums, roles                          *)
(***************************************************************************)

\* A strict majority of the voter set V (KIP-595 §"Key Concepts": "majority
\* of the voters").
IsMajorityOf(S, V) == Cardinality(S \cap V) * 2 > Cardinality(V)

\* ... of the bootstrap voters (used by the invariants of this module).
IsVoterMajority(S) == IsMajorityOf(S, Voters)

(***************************************************************************)
(* The voter set replica i acts on (KIP-642 §"Reassignment Algorithm" step *)
(* 4 and its "main subtlety"; KRaftLog!VoterSetOf).  VotersOf,             *)
(* MajorityVotersOf and VoteFromNonVoter (below) are the rules that        *)
(* KRaftReassign's bug configurations vary; every other operator reaches   *)
(* the voter set through them.                                             *)
(***************************************************************************)
VotersOf(i) == VoterSetOf(log[i], Voters)

\* The set whose majority replica i counts, for elections, the high
\* watermark and the leader progress timeout: its current voters.
MajorityVotersOf(i) == VotersOf(i)

IsQuorumOf(i, S) == IsMajorityOf(S, MajorityVotersOf(i))

\* The replicas whose votes candidate i asks for and counts.  Observers are
\* "not eligible to cast votes" (KIP-595 §"Key Concepts", "Observer").
ElectorateOf(i) == IF BugObserverVotes THEN Server ELSE VotersOf(i)
IsElectionQuorumOf(i, S) ==
    Cardinality(S \cap ElectorateOf(i)) * 2 > Cardinality(MajorityVotersOf(i))

\* Whether replica j casts votes at all: only if it is in its own electorate
\* (KIP-595 §"Key Concepts": observers "do not vote").  A hook, like
\* VotersOf: tlc_configs/reassign-finding-cure-any-replica-votes substitutes
\* KRaftReassign's AnyReplicaVotes for it (docs/spec-reassignment.md).
GrantsVotes(j) == j \in ElectorateOf(j)

\* The same for the bootstrap voters (kept for modules that compose this one).
Electorate == IF BugObserverVotes THEN Server ELSE Voters
IsElectionQuorum(S) ==
    Cardinality(S \cap Electorate) * 2 > Cardinality(Voters)

\* The role of a replica that is neither candidate nor leader, given its
\* persisted vote and known leader.
PassiveRole(v, l) ==
    IF l # Nil THEN "Follower" ELSE IF v # Nil THEN "Voted" ELSE "Unattached"

NoEndOffsets == [v \in Voters |-> -1]

\* The records a new leader of epoch e appends to its log l at the start of
\* its epoch: its LeaderChange control record (KIP-595 §"Vote Response
\* Handling" step 3).  A hook: KRaftReassign.tla substitutes KIP-642's
\* bootstrap VoterAssignment before it when l is empty (§"Bootstrapping
\* Procedure"); KIP-595 alone appends exactly Append(l, LeaderChange).
EpochStartRecords(l, e) == << [epoch |-> e, value |-> LeaderChange] >>

\* A request carries the sender's cached clusterId; the receiver validates it
\* (KIP-595 §"Cluster Bootstrapping").  The model gives every replica a
\* cached clusterId from the start (no "null" clusterId of a new broker).
ClusterIdMatches(m) == BugNoClusterIdCheck \/ m.clusterId = ClusterOf[m.dest]

(***************************************************************************)
(*                        HELPERS: the network                             *)
(* A bag of messages.  Loss (DropMessage), duplication (DuplicateMessage)  *)
(* and reordering (any message in the bag may be received next) are all    *)
(* possible.  A sender does not issue a request identical to one still in  *)
(* flight (the same message would just be a duplicate, which is            *)
(* DuplicateMessage's business).                                           *)
(***************************************************************************)
InFlight(m) == BagIn(m, msgs)
NumInFlight == BagCardinality(msgs)

Send(m) ==
    /\ ~InFlight(m)
    /\ NumInFlight < MaxInFlight
    /\ msgs' = msgs (+) SetToBag({m})

Discard(m) == msgs' = msgs (-) SetToBag({m})

\* Consume request req and send response resp in one step (the network size
\* does not grow, so a reply is never blocked by MaxInFlight).
Reply(resp, req) == msgs' = (msgs (-) SetToBag({req})) (+) SetToBag({resp})

(***************************************************************************)
(*                        MESSAGES (KIP-595 schemas)                       *)
(* Every message has type, src, dest and epoch.  Responses piggyback the   *)
(* responder's epoch and known leader (KIP-595 §"Leader Election and Data  *)
(* Replication", attribute 2) and an error code.                           *)
(***************************************************************************)
VoteRequest(i, j) ==
    [type |-> "VoteRequest", src |-> i, dest |-> j,
     epoch |-> currentEpoch[i],                 \* CandidateEpoch
     lastOffsetEpoch |-> LastEpoch(log[i]),     \* LastOffsetEpoch
     lastOffset |-> Len(log[i]),                \* LastOffset (log end offset)
     clusterId |-> ClusterOf[i]]

VoteResponse(j, i, e, l, granted, err) ==
    [type |-> "VoteResponse", src |-> j, dest |-> i, epoch |-> e,
     leaderId |-> l, voteGranted |-> granted, error |-> err]

BeginQuorumEpochRequest(i, j) ==                \* LeaderId = src
    [type |-> "BeginQuorumEpochRequest", src |-> i, dest |-> j,
     epoch |-> currentEpoch[i], clusterId |-> ClusterOf[i]]

BeginQuorumEpochResponse(j, i, e, l, err) ==
    [type |-> "BeginQuorumEpochResponse", src |-> j, dest |-> i, epoch |-> e,
     leaderId |-> l, error |-> err]

EndQuorumEpochRequest(i, j, successors) ==      \* LeaderId = ReplicaId = src
    [type |-> "EndQuorumEpochRequest", src |-> i, dest |-> j,
     epoch |-> currentEpoch[i], preferredSuccessors |-> successors,
     clusterId |-> ClusterOf[i]]

\* Sent only under KafkaResignedRepeatsEndQuorumEpoch (KIP-595 §"EndQuorumEpoch
\* Response Handling"; this module otherwise leaves the response out).
EndQuorumEpochResponse(j, i, e, l, err) ==
    [type |-> "EndQuorumEpochResponse", src |-> j, dest |-> i, epoch |-> e,
     leaderId |-> l, error |-> err]

FetchRequest(i, j) ==
    [type |-> "FetchRequest", src |-> i, dest |-> j,
     epoch |-> currentEpoch[i],                 \* CurrentLeaderEpoch
     fetchOffset |-> Len(log[i]),               \* FetchOffset
     lastFetchedEpoch |-> LastEpoch(log[i]),    \* LastFetchedEpoch
     clusterId |-> ClusterOf[i]]

\* fetchOffset / lastFetchedEpoch echo the request, so the fetcher can tell
\* which of its requests a response answers (Kafka matches a response to its
\* outstanding request; the model's network may deliver stale duplicates).
FetchResponse(j, i, e, l, err, hwm, records, diverging, req) ==
    [type |-> "FetchResponse", src |-> j, dest |-> i, epoch |-> e,
     leaderId |-> l, error |-> err, highWatermark |-> hwm,
     records |-> records, divergingEpoch |-> diverging,
     fetchOffset |-> req.fetchOffset,
     lastFetchedEpoch |-> req.lastFetchedEpoch]

(***************************************************************************)
(*                   HELPERS: state transitions of a node                  *)
(***************************************************************************)

ClearCandidateAndLeaderState(i) ==
    /\ votesGranted'      = [votesGranted      EXCEPT ![i] = {}]
    /\ votesRejected'     = [votesRejected     EXCEPT ![i] = {}]
    /\ followerEndOffset' = [followerEndOffset EXCEPT ![i] = NoEndOffsets]
    /\ fetchedSinceCheck' = [fetchedSinceCheck EXCEPT ![i] = {}]

(***************************************************************************)
(* i learns epoch e >= currentEpoch[i] with leader l (Nil if unknown) and  *)
(* becomes a passive replica: Follower of l, or Unattached / Voted.  A new *)
(* epoch clears the vote.  The quorum-state file is updated in the step.   *)
(* KIP-595 §"Vote Request Handling", §"BeginQuorumEpoch Request Handling", *)
(* §"FetchResponse Handling" step 1.                                       *)
(***************************************************************************)
StepDown(i, e, l) ==
    LET v == IF \/ e > currentEpoch[i]
               \/ (KafkaVoteForgottenOnLeader /\ l # Nil)
            THEN Nil ELSE votedId[i]
    IN  /\ currentEpoch' = [currentEpoch EXCEPT ![i] = e]
        /\ votedId'      = [votedId      EXCEPT ![i] = v]
        /\ leaderId'     = [leaderId     EXCEPT ![i] = l]
        /\ role'         = [role         EXCEPT ![i] = PassiveRole(v, l)]
        /\ ClearCandidateAndLeaderState(i)
        /\ ghostVotes'   = [ghostVotes   EXCEPT ![i] =
                               IF e > currentEpoch[i] THEN {} ELSE @]

(***************************************************************************)
(* KIP-595 §"Vote": "A voter triggers an election by first voting for      *)
(* itself and updating the quorum-state file.  Once this state is          *)
(* persistent, the voter becomes a candidate".                             *)
(***************************************************************************)
StartElection(i, e) ==
    /\ currentEpoch'  = [currentEpoch  EXCEPT ![i] = e]
    /\ votedId'       = [votedId       EXCEPT ![i] = i]
    /\ leaderId'      = [leaderId      EXCEPT ![i] = Nil]
    /\ role'          = [role          EXCEPT ![i] = "Candidate"]
    /\ votesGranted'  = [votesGranted  EXCEPT ![i] = {i}]
    /\ votesRejected' = [votesRejected EXCEPT ![i] = {}]
    /\ followerEndOffset' = [followerEndOffset EXCEPT ![i] = NoEndOffsets]
    /\ fetchedSinceCheck' = [fetchedSinceCheck EXCEPT ![i] = {}]
    /\ ghostVotes' = [ghostVotes EXCEPT ![i] = {i}]

(***************************************************************************)
(* An election that replica i starts in epoch e.  If i's own vote is      *)
(* already a majority of its voter set (a single-voter quorum, KIP-642     *)
(* §"Bootstrapping Example": "Start with a single node configured with    *)
(* quorum.voters=0"), no VoteResponse will come and it becomes leader at   *)
(* once, appending its LeaderChange record (KIP-595 §"Vote Response        *)
(* Handling" step 3).  With two or more voters this is StartElection.      *)
(* The log changes only in the first case.                                 *)
(***************************************************************************)
BeginElection(i, e) ==
    IF IsElectionQuorumOf(i, {i})
    THEN /\ currentEpoch' = [currentEpoch EXCEPT ![i] = e]
         /\ votedId'      = [votedId      EXCEPT ![i] =
                               IF KafkaVoteForgottenOnLeader THEN Nil ELSE i]
         /\ leaderId'     = [leaderId     EXCEPT ![i] = i]
         /\ role'         = [role         EXCEPT ![i] = "Leader"]
         /\ log'          = [log EXCEPT ![i] = @ \o EpochStartRecords(@, e)]
         /\ votesGranted'  = [votesGranted  EXCEPT ![i] = {}]
         /\ votesRejected' = [votesRejected EXCEPT ![i] = {}]
         /\ followerEndOffset' = [followerEndOffset EXCEPT ![i] = NoEndOffsets]
         /\ fetchedSinceCheck' = [fetchedSinceCheck EXCEPT ![i] = {}]
         /\ ghostVotes' = [ghostVotes EXCEPT ![i] = {i}]
    ELSE /\ StartElection(i, e)
         /\ UNCHANGED log

(***************************************************************************)
(* KIP-595 §"Vote Response Handling" steps 2-3: with a majority the        *)
(* candidate updates the quorum-state file (LeaderId = itself) and appends *)
(* the LeaderChange control record, whose offset is the epoch's start      *)
(* offset.  It has no endorsements yet (followerEndOffset all -1).  Its    *)
(* high watermark is unchanged (it is only advanced by Fetch handling).    *)
(***************************************************************************)
BecomeLeader(i) ==
    /\ role'     = [role     EXCEPT ![i] = "Leader"]
    /\ leaderId' = [leaderId EXCEPT ![i] = i]
    /\ votedId'  = IF KafkaVoteForgottenOnLeader
                   THEN [votedId EXCEPT ![i] = Nil] ELSE votedId
    /\ log'      = [log EXCEPT ![i] = @ \o EpochStartRecords(@, currentEpoch[i])]
    /\ ClearCandidateAndLeaderState(i)

Shutdown(i) == role' = [role EXCEPT ![i] = "Shutdown"]

(***************************************************************************)
(*                   HELPERS: high watermark                               *)
(***************************************************************************)

(***************************************************************************)
(* KIP-595 §"FetchRequest Handling" step 4 and §"Extra condition on        *)
(* commitment".  The leader's HWM becomes the largest offset h held by a   *)
(* majority of the voters (the leader's own log counts with its end        *)
(* offset), provided h > the current HWM and the last committed record     *)
(* l[h] has the leader's epoch, i.e. h is beyond the epoch's start offset  *)
(* (the LeaderChange record of the epoch is committed).                    *)
(***************************************************************************)
NewHighWatermark(j, offsets) ==
    LET V     == MajorityVotersOf(j)
        match == [v \in V |-> IF v = j THEN Len(log[j])
                              ELSE IF v \in DOMAIN offsets THEN offsets[v] ELSE -1]
        h     == MajorityOffset(match, V, Len(log[j]), LAMBDA S : IsMajorityOf(S, V))
    IN  IF /\ h > highWatermark[j]
           /\ BugNoCurrentEpochRule \/ log[j][h].epoch = currentEpoch[j]
        THEN h
        ELSE highWatermark[j]

\* GHOST: extend the committed history when leader j's HWM reaches h.
RecordCommitted(j, h) ==
    LET n == Len(ghostCommitted)
    IN  IF h > n
        THEN ghostCommitted \o
               [k \in 1..(h - n) |-> [entry |-> log[j][n + k],
                                      epoch |-> currentEpoch[j]]]
        ELSE ghostCommitted

(***************************************************************************)
(*                                INIT                                     *)
(* A freshly formatted quorum: epoch 0, no vote, no leader, empty logs.    *)
(***************************************************************************)
Init ==
    /\ currentEpoch      = [i \in Server |-> 0]
    /\ votedId           = [i \in Server |-> Nil]
    /\ leaderId          = [i \in Server |-> Nil]
    /\ log               = [i \in Server |-> << >>]
    /\ role              = [i \in Server |-> "Unattached"]
    /\ highWatermark     = [i \in Server |-> 0]
    /\ votesGranted      = [i \in Server |-> {}]
    /\ votesRejected     = [i \in Server |-> {}]
    /\ followerEndOffset = [i \in Server |-> NoEndOffsets]
    /\ fetchedSinceCheck = [i \in Server |-> {}]
    /\ msgs              = EmptyBag
    /\ restartCount      = 0
    /\ ghostCommitted    = << >>
    /\ ghostVotes        = [i \in Server |-> {}]

(***************************************************************************)
(*                      ACTIONS: timers and local events                   *)
(***************************************************************************)

\* KIP-595 §"Vote" (conditions 1 and 3: fetch timeout, election timeout) and
\* §"EndQuorumEpoch" (back-off of the non-first successors); a Resigned
\* leader also starts a new election when its timer expires.
Timeout(i) ==
    /\ i \in TimeoutVoters
    /\ i \in VotersOf(i)
    /\ role[i] \in {"Unattached", "Voted", "Follower", "Candidate", "Resigned"}
    /\ currentEpoch[i] < MaxEpoch
    /\ BeginElection(i, currentEpoch[i] + 1)
    /\ UNCHANGED <<highWatermark, msgs, restartCount, ghostCommitted>>

\* The orders of the other voters "sorted by each voter's current replicated
\* offset in descending order" (ties in any order).
SuccessorOrders(i) ==
    LET others == VotersOf(i) \ {i}
        n      == Cardinality(others)
    IN  {s \in [1..n -> others] :
            /\ \A a, b \in 1..n : a # b => s[a] # s[b]
            /\ \A k \in 1..(n - 1) :
                  followerEndOffset[i][s[k]] >= followerEndOffset[i][s[k + 1]]}

\* KIP-595 §"EndQuorumEpoch": leader i becomes Resigned and sends
\* EndQuorumEpoch with its preferred successors to every other voter, once,
\* without retrying ("The leader treats this as a best-effort graceful
\* shutdown").  Under KafkaResignedRepeatsEndQuorumEpoch the requests are
\* sent by SendEndQuorumEpoch instead, as long as i stays Resigned.
BecomeResigned(i) ==
    /\ IF KafkaResignedRepeatsEndQuorumEpoch
       THEN UNCHANGED msgs
       ELSE /\ NumInFlight + Cardinality(VotersOf(i) \ {i}) <= MaxInFlight
            /\ \E succ \in SuccessorOrders(i) :
                  msgs' = msgs (+) SetToBag({EndQuorumEpochRequest(i, j, succ) :
                                                  j \in VotersOf(i) \ {i}})
    /\ role' = [role EXCEPT ![i] = "Resigned"]
    /\ ClearCandidateAndLeaderState(i)
    /\ UNCHANGED <<persistentVars, highWatermark, restartCount, ghostVars>>

(***************************************************************************)
(* KIP-595 §"Leader Progress Timeout" (revision): "if the leader did not   *)
(* receive Fetch requests from a majority of the quorum for that amount of *)
(* time, it would begin a new election".  fetchedSinceCheck[i] collects    *)
(* the voters whose Fetch arrived in the current check window; a window is *)
(* closed (the set emptied, see RecordFetch) as soon as they and the       *)
(* leader form a majority, i.e. the progress condition is met and the     *)
(* timer restarts.  The timer can thus expire only while the leader has    *)
(* not heard from a majority since the last time it had.  (Without clocks  *)
(* this admits every real timing of the checks.)                           *)
(*                                                                         *)
(* KafkaCheckQuorumResigns: Kafka 3.7's LeaderState check-quorum timer     *)
(* (1.5 x quorum.fetch.timeout.ms) expires and KafkaRaftClient.pollLeader  *)
(* calls transitionToResigned(nonLeaderVotersByDescendingFetchOffset()):   *)
(* the leader resigns (BecomeResigned) in its epoch and starts an election *)
(* only when its election timer fires later (pollResigned, Timeout).       *)
(***************************************************************************)
LeaderProgressTimeout(i) ==
    /\ i \in TimeoutVoters
    /\ role[i] = "Leader"
    /\ ~IsQuorumOf(i, fetchedSinceCheck[i] \cup {i})
    /\ currentEpoch[i] < MaxEpoch
    /\ IF KafkaCheckQuorumResigns
       THEN BecomeResigned(i)
       ELSE /\ StartElection(i, currentEpoch[i] + 1)
            /\ UNCHANGED <<log, highWatermark, msgs, restartCount, ghostCommitted>>

\* The leader's progress window after a Fetch from voter f.
RecordFetch(S, i, f) ==
    IF IsQuorumOf(i, S \cup {i, f}) THEN {} ELSE S \cup {f}

\* KIP-595 §"EndQuorumEpoch": graceful resignation.  Bound: not in MaxEpoch.
Resign(i) ==
    /\ role[i] = "Leader"
    /\ currentEpoch[i] < MaxEpoch
    /\ BecomeResigned(i)

(***************************************************************************)
(* KafkaResignedRepeatsEndQuorumEpoch (KIP-595 §"EndQuorumEpoch"; Kafka    *)
(* 3.7 KafkaRaftClient.pollResigned, ResignedState.unackedVoters): a       *)
(* Resigned replica sends EndQuorumEpoch to every other voter that has not *)
(* answered, again after each request timeout.  Which voters answered is   *)
(* not modelled: any other voter may be sent one (a superset).  The        *)
(* successor list is the one computed at resignation, sorted by end offset *)
(* (LeaderState.nonLeaderVotersByDescendingFetchOffset), or empty after a  *)
(* restart (QuorumState.initialize: new ResignedState(..., emptyList())); *)
(* the model, which does not keep the list, allows any order of the other *)
(* voters or the empty list.                                               *)
(***************************************************************************)
SuccessorLists(i) ==
    LET others == VotersOf(i) \ {i}
        n      == Cardinality(others)
    IN  {<< >>} \cup {s \in [1..n -> others] : \A a, b \in 1..n : a # b => s[a] # s[b]}

\* KIP-595 §"EndQuorumEpoch" as Kafka 3.7 sends it (KafkaResignedRepeatsEndQuorumEpoch).
SendEndQuorumEpoch(i, j) ==
    /\ KafkaResignedRepeatsEndQuorumEpoch
    /\ role[i] = "Resigned"
    /\ j \in VotersOf(i) \ {i}
    /\ \E succ \in SuccessorLists(i) : Send(EndQuorumEpochRequest(i, j, succ))
    /\ UNCHANGED <<nodeVars, restartCount, ghostVars>>

(***************************************************************************)
(* KafkaLeaderFlushAdvancesHwm (KIP-595 §"Extra condition on commitment":  *)
(* a record is committed once a majority of the voters hold it; Kafka 3.7  *)
(* KafkaRaftClient.flushLeaderLog -> LeaderState.updateLocalState ->       *)
(* maybeUpdateHighWatermark): the leader recomputes its high watermark     *)
(* when its own log end offset moves, not only on a voter's Fetch          *)
(* (§"FetchRequest Handling" step 4).  It changes anything only where the *)
(* leader's own end offset is what the majority waits for: a single-voter *)
(* quorum, which otherwise never commits.                                  *)
(***************************************************************************)
AdvanceHighWatermarkOnFlush(i) ==
    /\ KafkaLeaderFlushAdvancesHwm
    /\ role[i] = "Leader"
    /\ LET h == NewHighWatermark(i, followerEndOffset[i])
       IN  /\ h > highWatermark[i]
           /\ highWatermark'  = [highWatermark EXCEPT ![i] = h]
           /\ ghostCommitted' = RecordCommitted(i, h)
    /\ UNCHANGED <<persistentVars, role, candidateVars, leaderVars, msgs,
                   restartCount, ghostVotes>>

\* KIP-595 §"Client Interactions": the leader appends a client record.
ClientRequest(i, v) ==
    /\ role[i] = "Leader"
    /\ Len(log[i]) < MaxLogLength
    /\ log' = [log EXCEPT ![i] = Append(@, [epoch |-> currentEpoch[i], value |-> v])]
    /\ UNCHANGED <<quorumVars, role, highWatermark, candidateVars, leaderVars,
                   msgs, restartCount, ghostVars>>

(***************************************************************************)
(* KafkaObserverLogNotFlushed: KIP-595 §"Persistent State" ("we should     *)
(* always enforce fsync upon appending to local log to guarantee Raft      *)
(* algorithm correctness"); Kafka 3.7 KafkaRaftClient.appendAsFollower     *)
(* (KafkaRaftClient.java:1197) flushes only "if (quorum.isVoter())", and   *)
(* nothing else flushes a follower's log, so a crash of an observer loses  *)
(* its unflushed suffix: its log restarts as any prefix of it (the whole   *)
(* log in Kafka's MockLog, whose reopen() drops everything after the last  *)
(* flush; a segment roll of a real UnifiedLog flushes a longer prefix).    *)
(* Its high watermark restarts at 0 (MockLog.reopen), as every replica's.  *)
(* The lengths i's log may have after its Restart:                         *)
(***************************************************************************)
RestartLogLengths(i) ==
    IF KafkaObserverLogNotFlushed /\ i \notin VotersOf(i)
    THEN 0..Len(log[i])
    ELSE {Len(log[i])}

(***************************************************************************)
(* KIP-595 §"Persistent State" / §"Quorum State": crash and restart.  The  *)
(* quorum-state file (epoch, votedId, leaderId) and the fsynced log        *)
(* survive, everything else is lost.  The restart role follows Kafka's     *)
(* quorum-state initialisation: a replica that was leader comes back       *)
(* Resigned (it must not lead again in that epoch), one that had voted for *)
(* itself comes back as a Candidate that re-sends its Vote requests        *)
(* (§"Vote Response Handling" step 2: "upon failover it can just resend    *)
(* the vote request").  Bound: a leader of MaxEpoch does not crash.        *)
(* Under KafkaObserverLogNotFlushed an observer's log restarts as any      *)
(* prefix of it (RestartLogLengths).                                       *)
(***************************************************************************)
Restart(i) ==
    /\ restartCount < MaxRestarts
    /\ role[i] # "Shutdown"
    /\ leaderId[i] = i => currentEpoch[i] < MaxEpoch
    /\ LET v == IF BugVoteNotPersisted THEN Nil ELSE votedId[i]
           r == IF leaderId[i] = i THEN "Resigned"
                ELSE IF leaderId[i] = Nil /\ v = i THEN "Candidate"
                ELSE PassiveRole(v, leaderId[i])
       IN  /\ votedId'       = [votedId       EXCEPT ![i] = v]
           /\ role'          = [role          EXCEPT ![i] = r]
           /\ votesGranted'  = [votesGranted  EXCEPT ![i] =
                                   IF r = "Candidate" THEN {i} ELSE {}]
    /\ \E k \in RestartLogLengths(i) : log' = [log EXCEPT ![i] = SubSeq(@, 1, k)]
    /\ highWatermark'     = [highWatermark     EXCEPT ![i] = 0]
    /\ votesRejected'     = [votesRejected     EXCEPT ![i] = {}]
    /\ followerEndOffset' = [followerEndOffset EXCEPT ![i] = NoEndOffsets]
    /\ fetchedSinceCheck' = [fetchedSinceCheck EXCEPT ![i] = {}]
    /\ restartCount'      = restartCount + 1
    /\ UNCHANGED <<currentEpoch, leaderId, msgs, ghostVars>>

(***************************************************************************)
(*                        ACTIONS: sending requests                        *)
(***************************************************************************)

\* KIP-595 §"Vote": the candidate "sends a VoteRequest to all the other
\* voters"; re-sent (after loss) until the voter has answered.
\* KafkaRejectedCandidateBacksOff: Kafka 3.7 maybeSendVoteRequests sends
\* only while the election can still be won (!CandidateState.isVoteRejected()).
SendVoteRequest(i, j) ==
    /\ role[i] = "Candidate"
    /\ j \in ElectorateOf(i) \ {i}
    /\ j \notin votesGranted[i] \cup votesRejected[i]
    /\ KafkaRejectedCandidateBacksOff =>
          IsElectionQuorumOf(i, ElectorateOf(i) \ votesRejected[i])
    /\ Send(VoteRequest(i, j))
    /\ UNCHANGED <<nodeVars, restartCount, ghostVars>>

\* KIP-595 §"BeginQuorumEpoch Response Handling": "The leader will continue
\* sending BeginQuorumEpoch to each known voter until it has received its
\* endorsement."  Only voters receive it.
SendBeginQuorumEpoch(i, j) ==
    /\ role[i] = "Leader"
    /\ j \in VotersOf(i) \ {i}
    /\ followerEndOffset[i][j] = -1
    /\ Send(BeginQuorumEpochRequest(i, j))
    /\ UNCHANGED <<nodeVars, restartCount, ghostVars>>

(***************************************************************************)
(* KIP-595 §"Fetch": followers (voters and observers) fetch from the       *)
(* leader they know.  A fetcher waits for the answer to its Fetch, or for  *)
(* quorum.request.timeout.ms, before it fetches again, but it cannot know  *)
(* what the network still holds: a late response, a duplicated or delayed *)
(* copy of an earlier request.  So the model does not limit a fetcher to   *)
(* one request in flight; Send never adds a copy of a request that is      *)
(* already in flight (that is DuplicateMessage's business), a fetch at an  *)
(* unchanged position is therefore not repeated while in flight, and       *)
(* MaxInFlight bounds the rest.  Responses echo their request's position   *)
(* and a stale one is ignored (HandleFetchResponse).                       *)
(*                                                                         *)
(* A replica that knows no leader: an observer sends Fetch "to any of the  *)
(* voters at random until the new leader is found" (§"BeginQuorumEpoch"),  *)
(* and so does a voter "until the election timeout expires" (§"Cluster     *)
(* Bootstrapping" step 1).  As the model's timers may expire at any moment,*)
(* a voter may poll any number of times before its timer fires.  (An       *)
(* earlier version allowed this only to voters whose timer could no longer *)
(* fire, to save states; the reference implementation polls as the KIP     *)
(* says, and its traces must stay inside the spec's behaviours.)           *)
(***************************************************************************)
\* KIP-595 §"Fetch" (followers pull from the leader) and §"Cluster
\* Bootstrapping" steps 1 and 4 (discovery Fetch to a random voter).
\* KafkaObserverFetchesAnyVoter: Kafka 3.7 pollFollowerAsObserver sends the
\* Fetch to any voter (maybeSendAnyVoterFetch) when the request to its leader
\* timed out or the connection backs off after an error.
SendFetchRequest(i, j) ==
    /\ \/ role[i] = "Follower" /\ j = leaderId[i]
       \/ /\ role[i] \in {"Unattached", "Voted"}
          /\ leaderId[i] = Nil
          /\ j \in VotersOf(i) \ {i}
       \/ /\ KafkaObserverFetchesAnyVoter
          /\ role[i] = "Follower" /\ i \notin VotersOf(i)
          /\ j \in VotersOf(i) \ {i}
    /\ Send(FetchRequest(i, j))
    /\ UNCHANGED <<nodeVars, restartCount, ghostVars>>

(***************************************************************************)
(*                     ACTIONS: handling messages                          *)
(***************************************************************************)

(***************************************************************************)
(* The "cannot happen" branches.  KIP-595 §"Error Codes":                 *)
(* "INVALID_QUORUM_STATE: This error code is reserved for cases when a     *)
(* request conflicts with the local known state.  For example, if two      *)
(* separate nodes try to become leader in the same epoch, then it          *)
(* indicates an illegal state change."  Each operator below is the guard   *)
(* of one handler branch that a correct quorum with a static voter set    *)
(* never takes; NoIllegalState                                             *)
(* (INVARIANTS) checks that no message in flight satisfies any of them,    *)
(* i.e. that the branch is never taken in any behaviour.                   *)
(*   SecondLeaderOfKnownEpoch(m): a BeginQuorumEpoch / EndQuorumEpoch of   *)
(*     the receiver's epoch from a leader other than the one it knows      *)
(*     (§"BeginQuorumEpoch Request Handling": INVALID_QUORUM_STATE;        *)
(*     §"EndQuorumEpoch Request Handling": rejected, the spec's reading of *)
(*     "the leader id is not known for this epoch", docs/spec-kraft.md §3);*)
(*   NotAPreferredSuccessor(m): an EndQuorumEpoch to a voter missing from  *)
(*     PreferredSuccessors (§"EndQuorumEpoch Request Handling":            *)
(*     INCONSISTENT_VOTER_SET);                                            *)
(*   VoteFromNonVoter(m): a VoteRequest whose candidate is not a voter     *)
(*     (§"Vote Request Handling" step 4a).                                 *)
(***************************************************************************)
SecondLeaderOfKnownEpoch(m) ==
    /\ m.epoch = currentEpoch[m.dest]
    /\ leaderId[m.dest] \notin {Nil, m.src}

NotAPreferredSuccessor(m) ==
    \A k \in 1..Len(m.preferredSuccessors) : m.preferredSuccessors[k] # m.dest

VoteFromNonVoter(m) == m.src \notin VotersOf(m.dest)

(***************************************************************************)
(* KIP-595 §"Vote Request Handling" steps 1-4 and §"Cluster Bootstrapping" *)
(* step 4.  Voter j handles candidate c's request:                         *)
(*  1. clusterId mismatch: reject with INVALID_CLUSTER_ID, no state change;*)
(*  2. j knows a larger epoch: reject;                                     *)
(*  4. a larger candidate epoch is adopted first (vote and leader cleared);*)
(*  3. if j already voted in the epoch, grant only to the same candidate;  *)
(*  4a/b. otherwise grant iff j knows no leader for the epoch, c is a      *)
(*     voter, and c's log is at least as up-to-date as j's.  The vote is   *)
(*     persisted (votedId) before the response is sent.                   *)
(***************************************************************************)
HandleVoteRequest(m) ==
    LET j == m.dest
        c == m.src
    IN
    /\ role[j] # "Shutdown"
    /\ CASE ~ClusterIdMatches(m) ->
              /\ Reply(VoteResponse(j, c, m.epoch, Nil, FALSE, "INVALID_CLUSTER_ID"), m)
              /\ UNCHANGED <<nodeVars, ghostVotes>>
         [] m.epoch < currentEpoch[j] ->
              /\ Reply(VoteResponse(j, c, currentEpoch[j], leaderId[j], FALSE,
                                    "FENCED_LEADER_EPOCH"), m)
              /\ UNCHANGED <<nodeVars, ghostVotes>>
         [] /\ VoteFromNonVoter(m)
            /\ j \in VotersOf(j)
            /\ j \in TimeoutVoters
            /\ \/ m.epoch > currentEpoch[j]
               \/ votedId[j] = Nil /\ leaderId[j] = Nil ->
              \* KIP-642 §"Reassignment Algorithm" ("Voters must reject votes
              \* from non-voters, but that does not mean that the non-voter
              \* cannot ultimately win the election.  Hence when a voter
              \* receives a VoteRequest from a non-voter, it must then become a
              \* candidate"): reject, and stand in the election of the request's
              \* epoch (j has not voted in it).  Never taken while every
              \* candidate is a bootstrap voter (NoIllegalState).
              /\ Reply(VoteResponse(j, c, m.epoch, Nil, FALSE, "NONE"), m)
              /\ BeginElection(j, m.epoch)
              /\ UNCHANGED highWatermark
         [] OTHER ->
              LET bump   == m.epoch > currentEpoch[j]
                  voted  == IF bump THEN Nil ELSE votedId[j]
                  leader == IF bump THEN Nil ELSE leaderId[j]
                  grant  == \/ voted = c
                            \/ /\ voted = Nil
                               /\ leader = Nil
                               /\ ~VoteFromNonVoter(m)
                               /\ GrantsVotes(j)
                               /\ \/ BugNoLogUpToDateCheck
                                  \/ IsUpToDate(m.lastOffsetEpoch, m.lastOffset, log[j])
                  newVote == IF grant THEN c ELSE voted
              IN  /\ currentEpoch' = [currentEpoch EXCEPT ![j] = m.epoch]
                  /\ votedId'      = [votedId      EXCEPT ![j] = newVote]
                  /\ leaderId'     = [leaderId     EXCEPT ![j] = leader]
                  /\ role' = [role EXCEPT ![j] =
                                IF bump \/ role[j] = "Unattached"
                                THEN PassiveRole(newVote, leader) ELSE @]
                  /\ IF bump THEN ClearCandidateAndLeaderState(j)
                             ELSE UNCHANGED <<candidateVars, leaderVars>>
                  /\ ghostVotes' = [ghostVotes EXCEPT ![j] =
                                       (IF bump THEN {} ELSE @) \cup
                                       (IF grant THEN {c} ELSE {})]
                  /\ Reply(VoteResponse(j, c, m.epoch, leader, grant, "NONE"), m)
                  /\ UNCHANGED <<log, highWatermark>>
    /\ UNCHANGED <<restartCount, ghostCommitted>>

(***************************************************************************)
(* KIP-595 §"Vote Response Handling" and §"Cluster Bootstrapping" step 2a. *)
(* A larger epoch in the response makes the candidate step down.  A       *)
(* candidate of the response's epoch records the vote; with a majority it  *)
(* becomes leader.  INVALID_CLUSTER_ID is "simply treated as a vote        *)
(* rejection".  When the rejections make a majority impossible (e.g. the   *)
(* 2-voter case) the candidate "can immediately step down and backoff": it *)
(* keeps its persisted self-vote (role Voted) and waits for its timer.     *)
(***************************************************************************)
(* KafkaClusterIdErrorsNotFatal: Kafka 3.7 answers INCONSISTENT_CLUSTER_ID  *)
(* as a top-level error (handleTopLevelError: logged, retried), so it is   *)
(* not recorded as a rejection.  KafkaLeaderFromVoteResponse: Kafka's      *)
(* maybeHandleCommonResponse makes a replica that knows no leader of its   *)
(* epoch follow the leader a response names (KIP-595 §"Leader Election and *)
(* Data Replication", attribute 2: "We piggyback current leader and epoch  *)
(* information on all responses").  KafkaRejectedCandidateBacksOff: Kafka  *)
(* keeps the rejected candidate in CandidateState (startBackingOff) until  *)
(* its timer fires; it is not Voted.                                      *)
HandleVoteResponse(m) ==
    LET i == m.dest
    IN
    /\ role[i] # "Shutdown"
    /\ CASE KafkaClusterIdErrorsNotFatal /\ m.error = "INVALID_CLUSTER_ID" ->
              UNCHANGED <<nodeVars, ghostVotes>>
         [] m.error # "INVALID_CLUSTER_ID" /\ m.epoch > currentEpoch[i] ->
              /\ StepDown(i, m.epoch, m.leaderId)
              /\ UNCHANGED <<log, highWatermark>>
         [] /\ KafkaLeaderFromVoteResponse
            /\ m.epoch = currentEpoch[i]
            /\ leaderId[i] = Nil
            /\ m.leaderId \notin {Nil, i} ->
              /\ StepDown(i, m.epoch, m.leaderId)
              /\ UNCHANGED <<log, highWatermark>>
         [] role[i] = "Candidate" /\ m.epoch = currentEpoch[i] /\ m.voteGranted ->
              LET granted == votesGranted[i] \cup {m.src}
              IN  IF IsElectionQuorumOf(i, granted)
                  THEN /\ BecomeLeader(i)
                       /\ UNCHANGED <<currentEpoch, highWatermark, ghostVotes>>
                  ELSE /\ votesGranted' = [votesGranted EXCEPT ![i] = granted]
                       /\ UNCHANGED <<persistentVars, role, highWatermark,
                                      votesRejected, leaderVars, ghostVotes>>
         [] role[i] = "Candidate" /\ m.epoch = currentEpoch[i] /\ ~m.voteGranted ->
              LET rejected == votesRejected[i] \cup {m.src}
              IN  IF /\ ~IsElectionQuorumOf(i, ElectorateOf(i) \ rejected)
                     /\ ~KafkaRejectedCandidateBacksOff
                  THEN /\ StepDown(i, currentEpoch[i], Nil)
                       /\ UNCHANGED <<log, highWatermark>>
                  ELSE /\ votesRejected' = [votesRejected EXCEPT ![i] = rejected]
                       /\ UNCHANGED <<persistentVars, role, highWatermark,
                                      votesGranted, leaderVars, ghostVotes>>
         [] OTHER ->
              UNCHANGED <<nodeVars, ghostVotes>>
    /\ Discard(m)
    /\ UNCHANGED <<restartCount, ghostCommitted>>

(***************************************************************************)
(* KIP-595 §"BeginQuorumEpoch Request Handling" and §"Cluster              *)
(* Bootstrapping" step 3.  A clusterId mismatch from an elected leader is  *)
(* fatal.  A lower epoch is rejected (FENCED_LEADER_EPOCH); a different    *)
(* leader for an epoch whose leader is already known is rejected ("if the  *)
(* leaderId for epoch 5 was known to be A, then a voter will reject a      *)
(* BeginQuorumEpoch request from a separate voter B from the same epoch"); *)
(* otherwise the voter accepts and becomes a follower of the leader.       *)
(***************************************************************************)
HandleBeginQuorumEpochRequest(m) ==
    LET j == m.dest
        l == m.src
    IN
    /\ role[j] # "Shutdown"
    /\ CASE ~ClusterIdMatches(m) /\ KafkaClusterIdErrorsNotFatal ->
              \* Kafka 3.7 handleBeginQuorumEpochRequest: a top-level
              \* INCONSISTENT_CLUSTER_ID answer, no state change.
              /\ Reply(BeginQuorumEpochResponse(j, l, m.epoch, Nil,
                                                "INVALID_CLUSTER_ID"), m)
              /\ UNCHANGED <<nodeVars, ghostVotes>>
         [] ~ClusterIdMatches(m) ->
              /\ Shutdown(j)
              /\ Discard(m)
              /\ UNCHANGED <<persistentVars, highWatermark, candidateVars, leaderVars,
                             ghostVotes>>
         [] m.epoch < currentEpoch[j] ->
              /\ Reply(BeginQuorumEpochResponse(j, l, currentEpoch[j], leaderId[j],
                                                "FENCED_LEADER_EPOCH"), m)
              /\ UNCHANGED <<nodeVars, ghostVotes>>
         [] SecondLeaderOfKnownEpoch(m) /\ ~BugAcceptSecondLeader ->
              /\ Reply(BeginQuorumEpochResponse(j, l, currentEpoch[j], leaderId[j],
                                                "INVALID_QUORUM_STATE"), m)
              /\ UNCHANGED <<nodeVars, ghostVotes>>
         [] OTHER ->
              /\ StepDown(j, m.epoch, l)
              /\ Reply(BeginQuorumEpochResponse(j, l, m.epoch, l, "NONE"), m)
              /\ UNCHANGED <<log, highWatermark>>
    /\ UNCHANGED <<restartCount, ghostCommitted>>

(***************************************************************************)
(* KIP-595 §"BeginQuorumEpoch Response Handling": with no error the leader *)
(* records the voter's endorsement (end offset at least 0); a larger epoch *)
(* (FENCED_LEADER_EPOCH) makes it step down and follow the leader named in *)
(* the response.                                                           *)
(***************************************************************************)
HandleBeginQuorumEpochResponse(m) ==
    LET l == m.dest
    IN
    /\ role[l] # "Shutdown"
    /\ CASE m.error # "INVALID_CLUSTER_ID" /\ m.epoch > currentEpoch[l] ->
              /\ StepDown(l, m.epoch, m.leaderId)
              /\ UNCHANGED <<log, highWatermark>>
         [] role[l] = "Leader" /\ m.epoch = currentEpoch[l] /\ m.error = "NONE" ->
              /\ followerEndOffset' = [followerEndOffset EXCEPT ![l][m.src] = Max(@, 0)]
              /\ UNCHANGED <<persistentVars, role, highWatermark, candidateVars,
                             fetchedSinceCheck, ghostVotes>>
         [] OTHER ->
              UNCHANGED <<nodeVars, ghostVotes>>
    /\ Discard(m)
    /\ UNCHANGED <<restartCount, ghostCommitted>>

(***************************************************************************)
(* KIP-595 §"EndQuorumEpoch Request Handling".  Rejected (no state change) *)
(* if the clusterId does not match, the epoch is smaller than the known    *)
(* one, the epoch's leader is known to be someone else, or the voter is    *)
(* not among the preferred successors (INCONSISTENT_VOTER_SET).  The first *)
(* successor "can transit to candidate state immediately"; the others      *)
(* learn the epoch and leader and start an election after a back-off,     *)
(* i.e. on a later Timeout.  The EndQuorumEpoch response is not modelled:  *)
(* the resigning (shutting-down) leader ignores it (§"EndQuorumEpoch       *)
(* Response Handling").                                                    *)
(***************************************************************************)
(***************************************************************************)
(* KafkaResignedRepeatsEndQuorumEpoch: Kafka 3.7's handleEndQuorumEpoch-   *)
(* Request validates the clusterId (top-level error) and the epoch         *)
(* (FENCED_LEADER_EPOCH), learns the epoch and leader (maybeTransition; a  *)
(* second leader of a known epoch throws IllegalStateException, the       *)
(* INVALID_QUORUM_STATE branch here), and answers; a follower of the       *)
(* resigning leader sets its fetch timer to the successor's back-off, 0 if *)
(* it is first or not in the list (endEpochElectionBackoff), so its        *)
(* election is a later Timeout, never part of this step, and no voter is   *)
(* refused for missing from the list.                                      *)
(***************************************************************************)
HandleEndQuorumEpochRequestKafka(m) ==
    LET j == m.dest
        l == m.src
    IN
    /\ role[j] # "Shutdown"
    /\ CASE ~ClusterIdMatches(m) ->
              /\ Reply(EndQuorumEpochResponse(j, l, m.epoch, Nil, "INVALID_CLUSTER_ID"), m)
              /\ UNCHANGED <<nodeVars, ghostVotes>>
         [] m.epoch < currentEpoch[j] ->
              /\ Reply(EndQuorumEpochResponse(j, l, currentEpoch[j], leaderId[j],
                                              "FENCED_LEADER_EPOCH"), m)
              /\ UNCHANGED <<nodeVars, ghostVotes>>
         [] SecondLeaderOfKnownEpoch(m) ->
              /\ Reply(EndQuorumEpochResponse(j, l, currentEpoch[j], leaderId[j],
                                              "INVALID_QUORUM_STATE"), m)
              /\ UNCHANGED <<nodeVars, ghostVotes>>
         [] OTHER ->
              /\ StepDown(j, m.epoch, l)
              /\ Reply(EndQuorumEpochResponse(j, l, m.epoch, l, "NONE"), m)
              /\ UNCHANGED <<log, highWatermark>>
    /\ UNCHANGED <<restartCount, ghostCommitted>>

HandleEndQuorumEpochRequest(m) ==
    IF KafkaResignedRepeatsEndQuorumEpoch THEN HandleEndQuorumEpochRequestKafka(m) ELSE
    LET j    == m.dest
        l    == m.src
        succ == m.preferredSuccessors
    IN
    /\ role[j] # "Shutdown"
    /\ CASE \/ ~ClusterIdMatches(m)
            \/ m.epoch < currentEpoch[j]
            \/ SecondLeaderOfKnownEpoch(m)
            \/ NotAPreferredSuccessor(m) ->
              UNCHANGED <<nodeVars, ghostVotes>>
         [] /\ succ[1] = j
            /\ j \in TimeoutVoters
            /\ m.epoch < MaxEpoch ->
              /\ BeginElection(j, m.epoch + 1)
              /\ UNCHANGED highWatermark
         [] OTHER ->
              /\ StepDown(j, m.epoch, l)
              /\ UNCHANGED <<log, highWatermark>>
    /\ Discard(m)
    /\ UNCHANGED <<restartCount, ghostCommitted>>

(***************************************************************************)
(* KIP-595 §"EndQuorumEpoch Response Handling" (only sent under            *)
(* KafkaResignedRepeatsEndQuorumEpoch): a larger epoch makes the resigned  *)
(* leader update its quorum state and follow the leader named (Kafka 3.7   *)
(* handleEndQuorumEpochResponse -> maybeHandleCommonResponse); an answer   *)
(* without error only stops the re-sending to that voter (not modelled);   *)
(* INCONSISTENT_CLUSTER_ID is a top-level error (ignored).                 *)
(***************************************************************************)
HandleEndQuorumEpochResponse(m) ==
    LET i == m.dest
    IN
    /\ role[i] # "Shutdown"
    /\ CASE m.error # "INVALID_CLUSTER_ID" /\ m.epoch > currentEpoch[i] ->
              /\ StepDown(i, m.epoch, m.leaderId)
              /\ UNCHANGED <<log, highWatermark>>
         [] OTHER ->
              UNCHANGED <<nodeVars, ghostVotes>>
    /\ Discard(m)
    /\ UNCHANGED <<restartCount, ghostCommitted>>

(***************************************************************************)
(* KIP-595 §"FetchRequest Handling" steps 1-4 (and §"BeginQuorumEpoch":    *)
(* "If a non-leader receives a Fetch request, it would return an error     *)
(* code ... and it will also encode the current known leader id / epoch"). *)
(*  1. clusterId mismatch: INVALID_CLUSTER_ID (naming the responder as    *)
(*     leader iff it is the leader, so the fetcher knows whether the error *)
(*     comes from an elected leader);                                      *)
(*  2. epoch differs from the leader's: FENCED_LEADER_EPOCH (smaller) or   *)
(*     UNKNOWN_LEADER_EPOCH (larger); a non-leader answers                 *)
(*     NOT_LEADER_OR_FOLLOWER; every error carries epoch and leader;      *)
(*  3. FetchOffset / LastFetchedEpoch are validated against the leader's   *)
(*     log: if inconsistent, an empty response with DivergingEpoch;        *)
(*     otherwise the record at FetchOffset (batches of one record: a       *)
(*     larger batch is a sequence of one-record fetches);                  *)
(*  4. a fetch from a voter records its end offset (and endorsement) and   *)
(*     may advance the high watermark; observers' fetches never do.        *)
(***************************************************************************)
(***************************************************************************)
(* An error response is sent only if it can tell the fetcher something:    *)
(* a larger epoch (FENCED_LEADER_EPOCH), or the leader of the fetcher's    *)
(* epoch (NOT_LEADER_OR_FOLLOWER with a known leader).  The others (an     *)
(* UNKNOWN_LEADER_EPOCH carries a smaller epoch than the fetcher's, a      *)
(* NOT_LEADER_OR_FOLLOWER without leader carries nothing) are ignored by   *)
(* the fetcher in every state it can be in when they arrive, so they are   *)
(* not modelled: the request is consumed as if the response were lost.    *)
(***************************************************************************)
FetchErrorInformative(m, j) ==
    \/ m.epoch < currentEpoch[j]
    \/ m.epoch = currentEpoch[j] /\ leaderId[j] \notin {Nil, m.src}

\* Error responses do not echo the fetch position (nothing reads it).
NoEcho == [fetchOffset |-> -1, lastFetchedEpoch |-> -1]

FetchEpochError(e, j) ==
    IF e < currentEpoch[j] THEN "FENCED_LEADER_EPOCH"
    ELSE IF e > currentEpoch[j] THEN "UNKNOWN_LEADER_EPOCH"
    ELSE "NOT_LEADER_OR_FOLLOWER"

(***************************************************************************)
(* KIP-642 §"Reassignment Algorithm" step 5 and the early KIP-595 revision *)
(* (§"FetchQuorumRecords Request Handling" step 4, error NOT_FOLLOWER):    *)
(* "we piggy-back on the Fetch to inform the voter to downgrade            *)
(* immediately after the new membership gets committed" ... "Note the      *)
(* fetched data shall still be valid".  Leader j answers NOT_FOLLOWER to a *)
(* fetcher f that was a voter, is not one in j's voter set, and whose      *)
(* removal j has committed.  The response is otherwise the normal one.     *)
(* Never the case without VoterAssignment records (f would be an observer, *)
(* never a voter).                                                         *)
(***************************************************************************)
NotFollower(j, f) ==
    /\ f \notin VotersOf(j)
    /\ f \notin VoterSetOf(Prefix(log[j], highWatermark[j]), Voters)
    /\ f \in EverVotersOf(log[j], Voters)

HandleFetchRequest(m) ==
    LET j == m.dest
        f == m.src
    IN
    /\ role[j] # "Shutdown"
    /\ CASE ~ClusterIdMatches(m) ->
              /\ Reply(FetchResponse(j, f, m.epoch,
                                     IF role[j] = "Leader" /\ ~KafkaClusterIdErrorsNotFatal
                                     THEN j ELSE Nil,
                                     "INVALID_CLUSTER_ID", -1,
                                     << >>, NoDivergence, NoEcho), m)
              /\ UNCHANGED <<nodeVars, ghostCommitted>>
         [] role[j] # "Leader" \/ m.epoch # currentEpoch[j] ->
              /\ IF FetchErrorInformative(m, j)
                 THEN Reply(FetchResponse(j, f, currentEpoch[j], leaderId[j],
                                          FetchEpochError(m.epoch, j), -1,
                                          << >>, NoDivergence, NoEcho), m)
                 ELSE Discard(m)
              /\ UNCHANGED <<nodeVars, ghostCommitted>>
         [] OTHER ->
              LET valid   == \/ BugSkipFetchValidation
                             \/ IsValidFetchPosition(log[j], m.fetchOffset,
                                                     m.lastFetchedEpoch)
                  isVoter == f \in VotersOf(j)
                  \* KafkaDivergingFetchNotCounted: Kafka 3.7 tryCompleteFetchRequest
                  \* calls LeaderState.updateReplicaState (end offset, acknowledgement,
                  \* check-quorum window) only for a VALID fetch position.
                  counted == valid \/ ~KafkaDivergingFetchNotCounted
                  tracked == /\ f \in DOMAIN followerEndOffset[j]
                             /\ isVoter \/ f \in TargetOf(log[j])
                             /\ counted
                  \* KafkaEndOffsetIsLastFetch: ReplicaState.updateFollowerState sets
                  \* endOffset to the FetchOffset (a lower one only logs a warning).
                  offsets == IF tracked
                             THEN [followerEndOffset[j] EXCEPT ![f] =
                                     IF valid /\ KafkaEndOffsetIsLastFetch THEN m.fetchOffset
                                     ELSE Max(@, IF valid THEN m.fetchOffset ELSE 0)]
                             ELSE followerEndOffset[j]
                  hwm     == IF isVoter /\ valid
                             THEN NewHighWatermark(j, offsets)
                             ELSE highWatermark[j]
                  \* KafkaHwmHiddenUntilEpochCommit: LeaderState.highWatermark is empty
                  \* until an offset beyond the epoch start offset is committed
                  \* (QuorumState.transitionToLeader); the response says -1.
                  shownHwm == IF /\ KafkaHwmHiddenUntilEpochCommit
                                 /\ ~(hwm > 0 /\ log[j][hwm].epoch = currentEpoch[j])
                              THEN -1 ELSE hwm
                  \* KafkaFetchReturnsBatches (KIP-595 §"Discussion: Pull v.s. Push
                  \* Model": "respond with a batch of entries"): the records from
                  \* FetchOffset up to any later offset.
                  lastOut == IF KafkaFetchReturnsBatches
                             THEN (m.fetchOffset + 1)..Len(log[j])
                             ELSE {m.fetchOffset + 1}
                  div     == IF valid THEN NoDivergence
                             ELSE DivergingEpochFor(log[j], m.lastFetchedEpoch)
              IN  /\ followerEndOffset' = [followerEndOffset EXCEPT ![j] = offsets]
                  /\ fetchedSinceCheck' = [fetchedSinceCheck EXCEPT ![j] =
                                             IF isVoter /\ counted
                                             THEN RecordFetch(@, j, f) ELSE @]
                  /\ highWatermark'  = [highWatermark EXCEPT ![j] = hwm]
                  /\ ghostCommitted' = RecordCommitted(j, hwm)
                  /\ \E k \in IF valid /\ m.fetchOffset < Len(log[j]) THEN lastOut ELSE {0} :
                        LET records == IF k = 0 THEN << >>
                                       ELSE SubSeq(log[j], m.fetchOffset + 1, k)
                        IN  Reply(FetchResponse(j, f, currentEpoch[j], j,
                                       IF NotFollower(j, f) THEN "NOT_FOLLOWER" ELSE "NONE",
                                       shownHwm, records, div, m), m)
                  /\ UNCHANGED <<persistentVars, role, candidateVars>>
    /\ UNCHANGED <<restartCount, ghostVotes>>

(***************************************************************************)
(* KIP-595 §"FetchResponse Handling" and §"Cluster Bootstrapping".         *)
(*  - INVALID_CLUSTER_ID from the elected leader (the responder says it is *)
(*    the leader): "the broker will shutdown" (fatal).  The same error     *)
(*    from a non-leader is ignored: "we only treat mismatched clusterId    *)
(*    errors as fatal when the broker's value conflicts with that of an    *)
(*    elected leader" (see docs/spec-kraft.md, Findings, on step 1a);     *)
(*  - a larger epoch (FENCED_LEADER_EPOCH): update the quorum-state file   *)
(*    and follow the leader in the response if it is defined;              *)
(*  - the same epoch with a leader the fetcher did not know: follow it     *)
(*    (§"Current Leader Discovery"); under                                 *)
(*    KafkaFetchResponseLeaderAndRecordsAtOnce a NONE response that        *)
(*    answers the fetcher's position is also handled as below in the same  *)
(*    step (Kafka 3.7 KafkaRaftClient.maybeHandleCommonResponse: "This     *)
(*    handling allows an observer to discover the leader and append to the *)
(*    log in the same Fetch request"; docs/kafka-conformance.md F15);      *)
(*  - a response of the current leader that answers the fetcher's current  *)
(*    position: with DivergingEpoch set, truncate (step 2; under           *)
(*    KafkaTruncationKeepsUnknownEpoch as Kafka 3.7's                      *)
(*    ReplicatedLog.truncateToEndOffset does, KRaftLog.tla); otherwise     *)
(*    append the records and set HWM := min(log end offset, leader's HWM), *)
(*    never lowering it;                                                   *)
(*  - anything else (stale, duplicate, other errors) is ignored.           *)
(***************************************************************************)
\* The FetchResponse m answers its fetcher i's current position (Kafka
\* handles only the response to its one in-flight Fetch).
AnswersFetchPosition(i, m) ==
    /\ m.fetchOffset = Len(log[i])
    /\ m.lastFetchedEpoch = LastEpoch(log[i])

\* KIP-595 §"FetchResponse Handling" step 2 and the append: i's log and HWM
\* after a response of its leader that answers its current position.
FetchResponseToLog(i, m) ==
    IF m.divergingEpoch # NoDivergence /\ ~BugIgnoreDivergingEpoch
    THEN /\ log' = [log EXCEPT ![i] =
                       IF KafkaTruncationKeepsUnknownEpoch
                       THEN TruncateToEndOffset(@, m.divergingEpoch)
                       ELSE TruncateToDivergence(@, m.divergingEpoch)]
         /\ UNCHANGED highWatermark
    ELSE LET newLog == log[i] \o m.records
             cap    == IF BugFollowerHwmNotCapped THEN m.highWatermark
                       ELSE Min(Len(newLog), m.highWatermark)
         IN  /\ log' = [log EXCEPT ![i] = newLog]
             /\ highWatermark' = [highWatermark EXCEPT ![i] = Max(@, cap)]

HandleFetchResponse(m) ==
    LET i == m.dest
    IN
    /\ role[i] # "Shutdown"
    /\ CASE /\ m.error = "INVALID_CLUSTER_ID"
            /\ m.leaderId = m.src \/ BugClusterIdFatalFromNonLeader
            /\ ~KafkaClusterIdErrorsNotFatal ->
              /\ Shutdown(i)
              /\ UNCHANGED <<persistentVars, highWatermark, candidateVars, leaderVars,
                             ghostVotes>>
         [] m.error = "INVALID_CLUSTER_ID" ->
              UNCHANGED <<nodeVars, ghostVotes>>
         [] m.epoch > currentEpoch[i] ->
              /\ StepDown(i, m.epoch, m.leaderId)
              /\ UNCHANGED <<log, highWatermark>>
         [] /\ m.epoch = currentEpoch[i]
            /\ leaderId[i] = Nil
            /\ m.leaderId \notin {Nil, i}
            /\ role[i] \in {"Unattached", "Voted", "Candidate"} ->
              /\ StepDown(i, m.epoch, m.leaderId)
              /\ IF /\ KafkaFetchResponseLeaderAndRecordsAtOnce
                    /\ m.error = "NONE"
                    /\ AnswersFetchPosition(i, m)
                 THEN FetchResponseToLog(i, m)
                 ELSE UNCHANGED <<log, highWatermark>>
         [] /\ m.error \in {"NONE", "NOT_FOLLOWER"}
            /\ role[i] = "Follower"
            /\ m.src = leaderId[i]
            /\ m.epoch = currentEpoch[i]
            /\ AnswersFetchPosition(i, m) ->
              /\ FetchResponseToLog(i, m)
              /\ UNCHANGED <<quorumVars, role, candidateVars, leaderVars, ghostVotes>>
         [] OTHER ->
              UNCHANGED <<nodeVars, ghostVotes>>
    /\ Discard(m)
    /\ UNCHANGED <<restartCount, ghostCommitted>>

(***************************************************************************)
(*                 ACTIONS: the network's faults                           *)
(***************************************************************************)

\* Message loss (including messages to a node that has shut down).  KIP-595
\* §"Configurations" (quorum.request.timeout.ms, quorum.retry.backoff.ms):
\* requests may fail or be lost and are retried.
DropMessage ==
    /\ \E m \in BagToSet(msgs) : Discard(m)
    /\ UNCHANGED <<nodeVars, restartCount, ghostVars>>

\* Message duplication: one more copy of a message in flight (a retried
\* request whose first copy was not lost; KIP-595 §"Configurations",
\* quorum.retry.backoff.ms, and §"Fetch" on retried Fetch requests).
DuplicateMessage ==
    /\ NumInFlight < MaxInFlight
    /\ \E m \in BagToSet(msgs) : msgs' = msgs (+) SetToBag({m})
    /\ UNCHANGED <<nodeVars, restartCount, ghostVars>>

(***************************************************************************)
(* Receive actions.  Each quantifies over the (state-dependent) network    *)
(* and is a named zero-arity operator so that TLC gives it its own action  *)
(* label (an inline \E m \in ... in Next would be labelled "Next").        *)
(***************************************************************************)
\* KIP-595 §"Vote Request Handling".
ReceiveVoteRequest ==
    \E m \in BagToSet(msgs) : m.type = "VoteRequest" /\ HandleVoteRequest(m)
\* KIP-595 §"Vote Response Handling".
ReceiveVoteResponse ==
    \E m \in BagToSet(msgs) : m.type = "VoteResponse" /\ HandleVoteResponse(m)
\* KIP-595 §"BeginQuorumEpoch Request Handling".
ReceiveBeginQuorumEpochRequest ==
    \E m \in BagToSet(msgs) : m.type = "BeginQuorumEpochRequest"
                              /\ HandleBeginQuorumEpochRequest(m)
\* KIP-595 §"BeginQuorumEpoch Response Handling".
ReceiveBeginQuorumEpochResponse ==
    \E m \in BagToSet(msgs) : m.type = "BeginQuorumEpochResponse"
                              /\ HandleBeginQuorumEpochResponse(m)
\* KIP-595 §"EndQuorumEpoch Request Handling".
ReceiveEndQuorumEpochRequest ==
    \E m \in BagToSet(msgs) : m.type = "EndQuorumEpochRequest"
                              /\ HandleEndQuorumEpochRequest(m)
\* KIP-595 §"EndQuorumEpoch Response Handling" (KafkaResignedRepeatsEndQuorumEpoch).
ReceiveEndQuorumEpochResponse ==
    \E m \in BagToSet(msgs) : m.type = "EndQuorumEpochResponse"
                              /\ HandleEndQuorumEpochResponse(m)
\* KIP-595 §"FetchRequest Handling".
ReceiveFetchRequest ==
    \E m \in BagToSet(msgs) : m.type = "FetchRequest" /\ HandleFetchRequest(m)
\* KIP-595 §"FetchResponse Handling".
ReceiveFetchResponse ==
    \E m \in BagToSet(msgs) : m.type = "FetchResponse" /\ HandleFetchResponse(m)

(***************************************************************************)
(*                           NEXT AND SPEC                                 *)
(***************************************************************************)
Next ==
    \* timers and local events
    \/ \E i \in Server : Timeout(i)
    \/ \E i \in Server : LeaderProgressTimeout(i)
    \/ \E i \in Server : Resign(i)
    \/ \E i \in Server, v \in Values : ClientRequest(i, v)
    \/ \E i \in Server : Restart(i)
    \/ \E i \in Server : AdvanceHighWatermarkOnFlush(i)
    \* requests
    \/ \E i, j \in Server : SendVoteRequest(i, j)
    \/ \E i, j \in Server : SendBeginQuorumEpoch(i, j)
    \/ \E i, j \in Server : SendFetchRequest(i, j)
    \/ \E i, j \in Server : SendEndQuorumEpoch(i, j)
    \* message handling
    \/ ReceiveVoteRequest
    \/ ReceiveVoteResponse
    \/ ReceiveBeginQuorumEpochRequest
    \/ ReceiveBeginQuorumEpochResponse
    \/ ReceiveEndQuorumEpochRequest
    \/ ReceiveEndQuorumEpochResponse
    \/ ReceiveFetchRequest
    \/ ReceiveFetchResponse
    \* network faults
    \/ DropMessage
    \/ DuplicateMessage

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(* Fairness, for the liveness check only.  Weak fairness on every protocol *)
(* action: timers of TimeoutVoters, client requests, request (re)sends and *)
(* the delivery of each kind of message on each channel src -> dest.  The  *)
(* faults (DropMessage, DuplicateMessage, Restart), Resign and the leader  *)
(* progress timeout get no fairness.                                       *)
(***************************************************************************)
Handle(m) ==
    CASE m.type = "VoteRequest"              -> HandleVoteRequest(m)
      [] m.type = "VoteResponse"             -> HandleVoteResponse(m)
      [] m.type = "BeginQuorumEpochRequest"  -> HandleBeginQuorumEpochRequest(m)
      [] m.type = "BeginQuorumEpochResponse" -> HandleBeginQuorumEpochResponse(m)
      [] m.type = "EndQuorumEpochRequest"    -> HandleEndQuorumEpochRequest(m)
      [] m.type = "EndQuorumEpochResponse"   -> HandleEndQuorumEpochResponse(m)
      [] m.type = "FetchRequest"             -> HandleFetchRequest(m)
      [] m.type = "FetchResponse"            -> HandleFetchResponse(m)

MessageTypes ==
    {"VoteRequest", "VoteResponse", "BeginQuorumEpochRequest",
     "BeginQuorumEpochResponse", "EndQuorumEpochRequest",
     "FetchRequest", "FetchResponse"} \cup
    (IF KafkaResignedRepeatsEndQuorumEpoch THEN {"EndQuorumEpochResponse"} ELSE {})

Deliver(i, j, t) ==
    \E m \in BagToSet(msgs) : m.src = i /\ m.dest = j /\ m.type = t /\ Handle(m)

\* The pairs i = j are left out: no replica sends to itself (TypeOK: m.src # m.dest),
\* so each of these actions is disabled for i = j and its fairness condition is
\* vacuous; leaving them out changes no behaviour and saves TLC their ENABLED tests.
Fairness ==
    /\ \A i \in Voters : WF_vars(Timeout(i))
    /\ \A i \in Voters : WF_vars(\E v \in Values : ClientRequest(i, v))
    /\ \A i \in Voters : WF_vars(AdvanceHighWatermarkOnFlush(i))
    /\ \A i \in Server : \A j \in Server \ {i} :
          /\ WF_vars(SendVoteRequest(i, j))
          /\ WF_vars(SendBeginQuorumEpoch(i, j))
          /\ WF_vars(SendFetchRequest(i, j))
          /\ \A t \in MessageTypes : WF_vars(Deliver(i, j, t))

LiveSpec == Spec /\ Fairness

(***************************************************************************)
(*                              INVARIANTS                                 *)
(***************************************************************************)
Roles == {"Unattached", "Voted", "Candidate", "Leader", "Follower",
          "Resigned", "Shutdown"}
ErrorCodes == {"NONE", "INVALID_CLUSTER_ID", "FENCED_LEADER_EPOCH",
               "UNKNOWN_LEADER_EPOCH", "NOT_LEADER_OR_FOLLOWER",
               "INVALID_QUORUM_STATE", "NOT_FOLLOWER"}
LogRecord == [epoch : 1..MaxEpoch, value : Values \cup {LeaderChange}]
IsLog(l) == /\ l \in [1..Len(l) -> LogRecord]
            /\ Len(l) <= MaxLogLength + MaxEpoch

TypeOK ==
    /\ currentEpoch \in [Server -> 0..MaxEpoch]
    /\ votedId \in [Server -> Server \cup {Nil}]
    /\ leaderId \in [Server -> Server \cup {Nil}]
    /\ \A i \in Server : IsLog(log[i])
    /\ role \in [Server -> Roles]
    /\ \A i \in Observers : role[i] \in {"Unattached", "Follower", "Shutdown"}
                            \/ BugObserverVotes
    /\ highWatermark \in [Server -> Nat]
    /\ votesGranted \in [Server -> SUBSET Server]
    /\ votesRejected \in [Server -> SUBSET Server]
    /\ followerEndOffset \in [Server -> [Voters -> -1..(MaxLogLength + MaxEpoch)]]
    /\ fetchedSinceCheck \in [Server -> SUBSET Voters]
    /\ IsABag(msgs)
    /\ NumInFlight <= MaxInFlight
    /\ \A m \in BagToSet(msgs) :
          /\ m.type \in MessageTypes
          /\ m.src \in Server /\ m.dest \in Server /\ m.src # m.dest
          /\ m.epoch \in 0..MaxEpoch
          /\ "error" \in DOMAIN m => m.error \in ErrorCodes
    /\ restartCount \in 0..MaxRestarts
    /\ ghostVotes \in [Server -> SUBSET Server]
    /\ \A i \in Server : votedId[i] # Nil => votedId[i] \in ghostVotes[i]

\* No two replicas are leader of the same epoch at the same time.
AtMostOneLeaderPerEpoch ==
    \A i, j \in Server :
        (/\ role[i] = "Leader" /\ role[j] = "Leader"
         /\ currentEpoch[i] = currentEpoch[j]) => i = j

\* Raft's Log Matching: if two logs have a record with the same offset and
\* epoch, the logs are identical up to and including that offset.  (The first
\* disjunct, the two logs agreeing on their common length, implies the second
\* and is one comparison of two values for TLC: most pairs of logs agree, and
\* the offset-by-offset check is left for the others.  Without it the
\* invariant was ~14 % of reassign-ci-shrink's TLC time, with it ~6 %.)
LogMatching ==
    \A i, j \in Server :
        LET n == Min(Len(log[i]), Len(log[j])) IN
        \/ SubSeq(log[i], 1, n) = SubSeq(log[j], 1, n)
        \/ \A k \in 1..n :
              log[i][k].epoch = log[j][k].epoch =>
                  SubSeq(log[i], 1, k) = SubSeq(log[j], 1, k)

\* Raft's Leader Completeness: every committed record is in the log of every
\* leader of the epoch that committed it or of a later epoch.
LeaderCompleteness ==
    \A i \in Server : role[i] = "Leader" =>
        \A k \in 1..Len(ghostCommitted) :
            ghostCommitted[k].epoch <= currentEpoch[i] =>
                /\ k <= Len(log[i])
                /\ log[i][k] = ghostCommitted[k].entry

\* No committed record is ever truncated or changed: each one is still held
\* (at its offset) by a majority of the voters, and no replica's committed
\* prefix (up to its HWM) disagrees with the committed history.
NoCommittedRecordLost ==
    /\ \A k \in 1..Len(ghostCommitted) :
          IsVoterMajority({v \in Voters : /\ k <= Len(log[v])
                                          /\ log[v][k] = ghostCommitted[k].entry})
    /\ \A i \in Server :
          \A k \in 1..Min(highWatermark[i], Len(log[i])) :
              /\ k <= Len(ghostCommitted)
              /\ log[i][k] = ghostCommitted[k].entry

\* A replica's HWM never points beyond its own log (it cannot consider
\* committed a record it does not have).
HighWatermarkWithinLog ==
    \A i \in Server : highWatermark[i] <= Len(log[i])

\* No replica votes for two different candidates in the same epoch.
NoDoubleVote ==
    \A i \in Server : Cardinality(ghostVotes[i]) <= 1

(***************************************************************************)
(* KIP-595 §"Cluster Bootstrapping": a replica never votes for, follows or *)
(* replicates from a replica with another clusterId.  "Joining the other   *)
(* cluster's log": a replica whose clusterId is not the one of a majority  *)
(* of the voters can only obtain records from the others, so its log must  *)
(* stay empty (all logs start empty).  Trivially true with one clusterId.  *)
(***************************************************************************)
QuorumClusterIds ==
    {c \in {ClusterOf[v] : v \in Voters} :
        IsVoterMajority({v \in Voters : ClusterOf[v] = c})}

ClusterIdIsolation ==
    \A i \in Server :
        /\ votedId[i] \in Server => ClusterOf[votedId[i]] = ClusterOf[i]
        /\ leaderId[i] \in Server => ClusterOf[leaderId[i]] = ClusterOf[i]
        /\ ClusterOf[i] \notin QuorumClusterIds => log[i] = << >>

\* KIP-595 §"Cluster Bootstrapping": "If we blindly shutdown the broker after
\* any INVALID_CLUSTER_ID error, then a single broker could end up killing a
\* majority of valid voters".  A replica with the quorum's clusterId is never
\* stopped by a clusterId error.
NoCorrectReplicaShutDown ==
    \A i \in Server : ClusterOf[i] \in QuorumClusterIds => role[i] # "Shutdown"

(***************************************************************************)
(* Election safety as the replicas see it (KIP-595 §"Key Concepts": "For  *)
(* each epoch there will be only one leader"; responses piggyback the      *)
(* responder's (epoch, leader), §"Leader Election and Data Replication"    *)
(* attribute 2, so a wrong pair would spread).  The historical form (no    *)
(* two replicas ever led the same epoch) needs a ghost map: KRaftHistory.  *)
(***************************************************************************)
\* Two replicas that know a leader of the same epoch know the same one.
KnownLeadersAgree ==
    \A i, j \in Server :
        (/\ currentEpoch[i] = currentEpoch[j]
         /\ leaderId[i] # Nil /\ leaderId[j] # Nil) => leaderId[i] = leaderId[j]

\* A known leader really led that epoch: it is still in the epoch and knows
\* itself as its leader (Leader, or Resigned / restarted), or it has moved
\* on to a later epoch (epochs never decrease).
KnownLeaderIsLeader ==
    \A i \in Server : leaderId[i] # Nil =>
        LET l == leaderId[i]
        IN  \/ currentEpoch[l] > currentEpoch[i]
            \/ currentEpoch[l] = currentEpoch[i] /\ leaderId[l] = l

\* KIP-595 §"Vote Response Handling" step 3 and §"Extra condition on
\* commitment": a leader's log holds its own LeaderChange record, the first
\* record of its epoch (the epoch's start offset), so the current-epoch rule
\* can commit everything before it.
LeaderChangeRecord(e) == [epoch |-> e, value |-> LeaderChange]
LeaderHoldsItsLeaderChange ==
    \A i \in Server : role[i] = "Leader" =>
        \E k \in 1..Len(log[i]) :
            /\ log[i][k] = LeaderChangeRecord(currentEpoch[i])
            /\ \A j \in 1..(k - 1) : log[i][j].epoch < currentEpoch[i]

\* KIP-595 §"FetchRequest Handling" step 4: the end offset a leader records
\* for a voter of its epoch is a true common prefix of the two logs (the
\* HWM is computed from these offsets).  A voter that has moved to a later
\* epoch may since have been truncated by the new leader; the old leader
\* learns that only from a response, so such voters are exempt.
EndOffsetsAreCommonPrefixes ==
    \A i \in Server : role[i] = "Leader" =>
        \A v \in Voters \ {i} :
            LET o == followerEndOffset[i][v]
            IN  currentEpoch[v] = currentEpoch[i] =>
                    /\ o <= Len(log[v]) /\ o <= Len(log[i])
                    /\ SubSeq(log[v], 1, o) = SubSeq(log[i], 1, o)

(***************************************************************************)
(* No "cannot happen" branch is ever taken: no message in flight would be  *)
(* handled by one of them (see SecondLeaderOfKnownEpoch and its siblings). *)
(* The handler takes the branch iff the receiver is running, the clusterId *)
(* matches, the epoch is not smaller than its own, and the guard holds, at *)
(* delivery; any message in flight may be delivered next, so the invariant *)
(* over the network is exactly "the branch is never taken".                *)
(***************************************************************************)
WouldTakeIllegalBranch(m) ==
    /\ m.type \in {"BeginQuorumEpochRequest", "EndQuorumEpochRequest", "VoteRequest"}
    /\ role[m.dest] # "Shutdown"
    /\ ClusterIdMatches(m)
    /\ m.epoch >= currentEpoch[m.dest]
    /\ \/ m.type = "BeginQuorumEpochRequest" /\ SecondLeaderOfKnownEpoch(m)
       \/ /\ m.type = "EndQuorumEpochRequest"
          /\ \/ SecondLeaderOfKnownEpoch(m)
             \/ NotAPreferredSuccessor(m) /\ ~KafkaResignedRepeatsEndQuorumEpoch
       \/ m.type = "VoteRequest" /\ VoteFromNonVoter(m)

NoIllegalState == \A m \in BagToSet(msgs) : ~WouldTakeIllegalBranch(m)

(***************************************************************************)
(*                           ACTION PROPERTY                               *)
(* A replica's HWM never decreases, except that a crash loses it (it is    *)
(* volatile in the model): a step that lowers highWatermark[i] resets it   *)
(* to 0 and is a restart of i itself — the restart counter grows and no    *)
(* other replica's state changes (Restart(i), or KRaftHistory's LoseDisk). *)
(***************************************************************************)
RestartOf(i) ==
    /\ restartCount' = restartCount + 1
    /\ \A j \in Server \ {i} :
          /\ currentEpoch'[j] = currentEpoch[j] /\ votedId'[j] = votedId[j]
          /\ leaderId'[j] = leaderId[j] /\ log'[j] = log[j] /\ role'[j] = role[j]
          /\ highWatermark'[j] = highWatermark[j]
          /\ votesGranted'[j] = votesGranted[j] /\ votesRejected'[j] = votesRejected[j]
          /\ followerEndOffset'[j] = followerEndOffset[j]
          /\ fetchedSinceCheck'[j] = fetchedSinceCheck[j]

HighWatermarkMonotonic ==
    [][\A i \in Server :
          highWatermark'[i] < highWatermark[i] =>
              /\ highWatermark'[i] = 0
              /\ RestartOf(i)]_vars

(***************************************************************************)
(*                              LIVENESS                                   *)
(* Under Fairness, once the network stops losing and duplicating messages *)
(* (restarts are bounded by MaxRestarts), a leader is eventually elected   *)
(* and a client record is eventually committed.                            *)
(***************************************************************************)
NetworkFault == DropMessage \/ DuplicateMessage
NetworkFaultsEventuallyStop == <>[][~NetworkFault]_vars

LeaderElected == \E i \in Voters : role[i] = "Leader"
ClientRecordCommitted ==
    \E k \in 1..Len(ghostCommitted) : ghostCommitted[k].entry.value \in Values

EventuallyLeaderElected ==
    NetworkFaultsEventuallyStop => <>LeaderElected
EventuallyClientRecordCommitted ==
    NetworkFaultsEventuallyStop => <>ClientRecordCommitted

=============================================================================
