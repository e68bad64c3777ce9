------------------------------ MODULE KRaftBackoff ------------------------------
(***************************************************************************)
(* Liveness of KRaft.tla with the randomised election back-off modelled as *)
(* rounds (KIP-595 §"Vote": "New elections are always delayed by a random  *)
(* time which is bounded by quorum.election.backoff.max.ms.  This is part  *)
(* of the Raft protocol and is meant to prevent gridlocked elections";     *)
(* §"Vote Response Handling", "Note on Gridlocked Elections").             *)
(*                                                                         *)
(* A behaviour has two phases.                                             *)
(*  - Faults.  Everything KRaft.tla allows: any voter's timer may expire   *)
(*    at any moment (so candidates may split the vote), messages are lost  *)
(*    and duplicated, replicas crash, and the leader may be lost by a      *)
(*    crash, a resignation (EndQuorumEpoch) or its progress timeout.  Only *)
(*    the kinds of leader loss in LeaderLosses are enabled, and a timer    *)
(*    starts no epoch beyond FaultEpochs (a leader of at most FaultEpochs  *)
(*    may be lost; the elections that loss starts reach FaultEpochs + 1).  *)
(*  - Quiet (StopFaults, taken once, eventually: weak fairness).  No loss, *)
(*    duplication, crash or resignation any more; every message is         *)
(*    eventually delivered.  Timers now follow the back-off: an election   *)
(*    ROUND starts only while no election is under way (no Candidate) and  *)
(*    no leader of the latest epoch exists, and in a round exactly one     *)
(*    timer fires first; the others' random back-off outlasts the election *)
(*    it starts, which ends when its candidate becomes leader or steps     *)
(*    down (rejections, a larger epoch).  The timer that fires first is    *)
(*    that of a voter whose log is at least as up-to-date as every voter's *)
(*    (§"Vote Request Handling" 4b), or the progress timer of a leader      *)
(*    that no majority of its epoch follows (the revision's §"Leader       *)
(*    Progress Timeout").                                                  *)
(*                                                                         *)
(* Why "a most up-to-date voter fires first" is the back-off and not the   *)
(* conclusion: each round's first timer is random, so with probability 1   *)
(* some round is started by such a voter (§"EndQuorumEpoch" even biases   *)
(* the delays "so that the most up-to-date voter has a higher chance to be *)
(* elected").  Rounds started by a stale voter are harmless (it is         *)
(* refused, steps down, and the voters have adopted its epoch) but each    *)
(* costs an epoch, which a bounded model cannot afford indefinitely; they  *)
(* occur in the faults phase, where every voter's timer fires at any       *)
(* moment.  Without the back-off (BugNoBackoff: in the quiet phase every   *)
(* voter's timer may still fire at any moment, under weak fairness) the    *)
(* timers can keep splitting the vote until the epochs run out: the        *)
(* negative configurations show the properties below then fail.            *)
(*                                                                         *)
(* KRaft.tla's variables and actions are used unchanged; this module adds  *)
(* the phase, a ghost record of the leaders lost, and the back-off guard.  *)
(***************************************************************************)
EXTENDS KRaft

CONSTANTS
    FaultEpochs,    \* bound: in the faults phase a timer starts no epoch
                    \* > FaultEpochs and only leaders of epochs <= FaultEpochs
                    \* are lost; MaxEpoch - FaultEpochs epochs remain for the
                    \* quiet phase's rounds
    LeaderLosses,   \* the kinds of leader loss enabled in the faults phase
    BugNoBackoff,   \* no back-off: quiet-phase timers fire at any moment
    QuietMaxInFlight, \* bound on the network in the quiet phase (>= MaxInFlight);
                    \* QuietBoundNeverReached checks that it never binds there
    BugObserverNoDiscovery  \* an observer that knows no leader never sends a
                    \* discovery Fetch (§"BeginQuorumEpoch": "an observer will
                    \* send a Fetch request to any of the voters at random
                    \* until the new leader is found")

LossKinds == {"Crash", "Resignation", "ProgressTimeout"}

ASSUME
    /\ FaultEpochs \in Nat /\ FaultEpochs < MaxEpoch
    /\ QuietMaxInFlight \in Nat /\ QuietMaxInFlight >= MaxInFlight
    /\ LeaderLosses \subseteq LossKinds
    /\ BugNoBackoff \in BOOLEAN /\ BugObserverNoDiscovery \in BOOLEAN

VARIABLES
    faultsStopped,  \* FALSE in the faults phase, TRUE in the quiet phase
    lostLeader      \* GHOST: [LossKinds -> 0..MaxEpoch], the epoch of the
                    \* last leader lost by each kind of loss (0: none yet)

backoffVars == <<vars, faultsStopped, lostLeader>>

\* KRaft.tla with the quiet phase's network bound: the same actions and
\* variables, only Send's guard NumInFlight < MaxInFlight is relaxed.
Quiet == INSTANCE KRaft WITH MaxInFlight <- QuietMaxInFlight

BackoffInit ==
    /\ Init
    /\ faultsStopped = FALSE
    /\ lostLeader = [k \in LossKinds |-> 0]

(***************************************************************************)
(*                     HELPERS: leaders and up-to-date logs                *)
(***************************************************************************)
LatestEpoch == MaxOf({currentEpoch[v] : v \in Voters})

\* The voters following l in l's epoch (l itself included: leaderId[l] = l).
FollowersOf(l) == {v \in Voters : currentEpoch[v] = currentEpoch[l] /\ leaderId[v] = l}

\* l leads its epoch and a majority of the voters follow it.
LeaderFollowedByMajority(l) ==
    role[l] = "Leader" /\ IsVoterMajority(FollowersOf(l))

\* i's log is at least as up-to-date as every voter's (§"Vote Request
\* Handling" 4b), so every voter of a smaller epoch would grant i its vote.
MostUpToDate(i) ==
    \A j \in Voters : IsUpToDate(LastEpoch(log[i]), Len(log[i]), log[j])

\* No election is under way and no leader of the latest epoch exists (one
\* that does makes itself known by BeginQuorumEpoch before any back-off
\* expires): the next round may start.
\* (Under KRaft.tla's KafkaRejectedCandidateBacksOff a candidate whose
\* election cannot be won any more stays Candidate until its timer fires:
\* its election is over, as a stepped-down candidate's is.)
ElectionUnderWay(c) ==
    /\ role[c] = "Candidate"
    /\ KafkaRejectedCandidateBacksOff =>
          IsElectionQuorumOf(c, ElectorateOf(c) \ votesRejected[c])

RoundMayStart ==
    /\ \A c \in Voters : ~ElectionUnderWay(c)
    /\ \A l \in Voters : ~(role[l] = "Leader" /\ currentEpoch[l] = LatestEpoch)

ghost == <<faultsStopped, lostLeader>>

(***************************************************************************)
(*                       ACTIONS: the faults phase                         *)
(***************************************************************************)
\* KIP-595 §"Vote" conditions 1 and 3 (fetch / election timeout): while the
\* faults last a timer may expire at any moment.
FaultTimeout(i) ==
    /\ ~faultsStopped
    /\ currentEpoch[i] < FaultEpochs
    /\ Timeout(i)
    /\ UNCHANGED ghost

LoseLeader(kind, i) ==
    lostLeader' = [lostLeader EXCEPT ![kind] = currentEpoch[i]]

\* KIP-595 §"Persistent State": a crash; a crashed leader comes back Resigned.
FaultRestart(i) ==
    /\ ~faultsStopped
    /\ role[i] = "Leader" => /\ "Crash" \in LeaderLosses
                             /\ currentEpoch[i] <= FaultEpochs
    /\ Restart(i)
    /\ IF role[i] = "Leader" THEN LoseLeader("Crash", i) ELSE UNCHANGED lostLeader
    /\ UNCHANGED faultsStopped

\* KIP-595 §"EndQuorumEpoch": graceful resignation.
FaultResign(i) ==
    /\ ~faultsStopped
    /\ "Resignation" \in LeaderLosses
    /\ currentEpoch[i] <= FaultEpochs
    /\ Resign(i)
    /\ LoseLeader("Resignation", i)
    /\ UNCHANGED faultsStopped

\* KIP-595 revision §"Leader Progress Timeout": the leader's progress timer
\* expires (fetches lost or late) and it starts an election.
FaultProgressTimeout(i) ==
    /\ ~faultsStopped
    /\ "ProgressTimeout" \in LeaderLosses
    /\ currentEpoch[i] <= FaultEpochs
    /\ LeaderProgressTimeout(i)
    /\ LoseLeader("ProgressTimeout", i)
    /\ UNCHANGED faultsStopped

\* KIP-595 §"Configurations" (request timeouts and retries): loss and
\* duplication.
FaultNetwork ==
    /\ ~faultsStopped
    /\ DropMessage \/ DuplicateMessage
    /\ UNCHANGED ghost

\* The faults stop for good.
StopFaults ==
    /\ ~faultsStopped
    /\ faultsStopped' = TRUE
    /\ UNCHANGED <<vars, lostLeader>>

(***************************************************************************)
(*                       ACTIONS: the quiet phase                          *)
(***************************************************************************)
\* KIP-595 §"Vote" (randomised back-off): a round starts with the timer of a
\* most up-to-date voter expiring first.
RoundTimeout(i) ==
    /\ faultsStopped /\ ~BugNoBackoff
    /\ RoundMayStart
    /\ MostUpToDate(i)
    /\ Timeout(i)
    /\ UNCHANGED ghost

\* KIP-595 revision §"Leader Progress Timeout": a round starts with the
\* progress timer of a leader that no majority of its epoch follows.
RoundProgressTimeout(i) ==
    /\ faultsStopped /\ ~BugNoBackoff
    /\ RoundMayStart
    /\ ~IsVoterMajority(FollowersOf(i))
    /\ LeaderProgressTimeout(i)
    /\ UNCHANGED ghost

\* BugNoBackoff: every timer may expire at any moment, as in the faults phase.
NoBackoffTimeout(i) ==
    /\ faultsStopped /\ BugNoBackoff
    /\ Timeout(i) \/ LeaderProgressTimeout(i)
    /\ UNCHANGED ghost

QuietTimer(i) == RoundTimeout(i) \/ RoundProgressTimeout(i) \/ NoBackoffTimeout(i)

(***************************************************************************)
(*                  ACTIONS: the protocol (both phases)                    *)
(*                                                                         *)
(* Sending requests (KIP-595 §"Vote", §"BeginQuorumEpoch", §"Fetch").  In  *)
(* the faults phase MaxInFlight bounds the network as in KRaft.tla; in the *)
(* quiet phase the bound is QuietMaxInFlight, which the configurations     *)
(* choose so that it never binds (QuietBoundNeverReached): there a request *)
(* that may be sent stays sendable until it is sent, so weak fairness on   *)
(* sending is enough (with a full network it would need strong fairness,   *)
(* which TLC cannot check at this size).                                   *)
(***************************************************************************)
\* In the quiet phase a requester waits for the answer to its request
\* before it asks again (nothing is lost any more, so the answer comes;
\* KIP-595 §"Configurations": requests are retried after
\* quorum.request.timeout.ms).  i has a request of type req to j, or j's
\* response of type resp to i, in flight:
Outstanding(i, j, req, resp) ==
    \E m \in BagToSet(msgs) :
        \/ m.type = req /\ m.src = i /\ m.dest = j
        \/ m.type = resp /\ m.src = j /\ m.dest = i

\* KIP-595 §"Vote": the candidate asks every voter that has not answered.
BSendVoteRequest(i, j) ==
    IF faultsStopped
    THEN ~Outstanding(i, j, "VoteRequest", "VoteResponse") /\ Quiet!SendVoteRequest(i, j)
    ELSE SendVoteRequest(i, j)
\* KIP-595 §"BeginQuorumEpoch": the leader asks until it is endorsed.
BSendBeginQuorumEpoch(i, j) ==
    IF faultsStopped
    THEN /\ ~Outstanding(i, j, "BeginQuorumEpochRequest", "BeginQuorumEpochResponse")
         /\ Quiet!SendBeginQuorumEpoch(i, j)
    ELSE SendBeginQuorumEpoch(i, j)
\* i has a Fetch request, or the response to one, in flight.
FetchOutstanding(i) ==
    \E m \in BagToSet(msgs) :
        \/ m.type = "FetchRequest" /\ m.src = i
        \/ m.type = "FetchResponse" /\ m.dest = i

\* Discovery Fetch (a replica that knows no leader polls the voters,
\* §"BeginQuorumEpoch") only by observers, as in Kafka's KafkaRaftClient: an
\* unattached voter waits for BeginQuorumEpoch or its own timer.  (KRaft.tla
\* also lets voters poll, as §"Cluster Bootstrapping" step 1 allows; it
\* changes nothing for liveness, voters learn the leader from
\* BeginQuorumEpoch, and it multiplies the interleavings.)
\* BugObserverNoDiscovery: observers do not poll either.  In the quiet
\* phase a fetcher waits for the answer to its Fetch before it sends the
\* next one (nothing is lost any more, so an answer, or the silent discard
\* of the request by a replica that knows no leader, always comes).
Polls(i) == leaderId[i] = Nil

BSendFetchRequest(i, j) ==
    /\ Polls(i) => i \in Observers /\ ~BugObserverNoDiscovery
    /\ IF faultsStopped THEN ~FetchOutstanding(i) /\ Quiet!SendFetchRequest(i, j)
                        ELSE SendFetchRequest(i, j)

ProtocolStep ==
    /\ \/ \E i \in Server, v \in Values : ClientRequest(i, v)
       \/ \E i, j \in Server : BSendVoteRequest(i, j)
       \/ \E i, j \in Server : BSendBeginQuorumEpoch(i, j)
       \/ \E i, j \in Server : BSendFetchRequest(i, j)
       \/ ReceiveVoteRequest
       \/ ReceiveVoteResponse
       \/ ReceiveBeginQuorumEpochRequest
       \/ ReceiveBeginQuorumEpochResponse
       \/ ReceiveEndQuorumEpochRequest
       \/ ReceiveFetchRequest
       \/ ReceiveFetchResponse
       \* Kafka 3.7 switches of KRaft.tla (never enabled with them off): the
       \* answer to EndQuorumEpoch, the leader's HWM on its own flush, and
       \* (faults phase) the resigned leader's repeated EndQuorumEpoch.
       \/ ReceiveEndQuorumEpochResponse
       \/ \E i \in Server : AdvanceHighWatermarkOnFlush(i)
       \/ ~faultsStopped /\ \E i, j \in Server : SendEndQuorumEpoch(i, j)
    /\ UNCHANGED ghost

BackoffNext ==
    \/ \E i \in Server : FaultTimeout(i) \/ FaultRestart(i) \/ FaultResign(i)
                        \/ FaultProgressTimeout(i)
    \/ FaultNetwork
    \/ StopFaults
    \/ \E i \in Voters : QuietTimer(i)
    \/ ProtocolStep

BackoffSpec == BackoffInit /\ [][BackoffNext]_backoffVars

(***************************************************************************)
(* Fairness.  The faults eventually stop (weak fairness on StopFaults; the *)
(* faults themselves get none).  Weak fairness on the quiet-phase timers,  *)
(* on client requests, and per channel i -> j on sending a request and on  *)
(* delivering a message.  Per channel is enough: a replica's role enables  *)
(* at most one kind of request to j (Vote as Candidate, BeginQuorumEpoch   *)
(* as Leader, Fetch otherwise), and in the quiet phase a channel holds at  *)
(* most one request of a kind (requests are not re-sent while in flight,   *)
(* Fetch waits for its answer), so no message on it waits for ever while  *)
(* others are delivered.  (Per message type it would be 7 times as many    *)
(* fairness conditions, each evaluated on every transition.)               *)
(***************************************************************************)
SendTo(i, j) ==
    \/ BSendVoteRequest(i, j) \/ BSendBeginQuorumEpoch(i, j) \/ BSendFetchRequest(i, j)

DeliverOn(i, j) == \E t \in MessageTypes : Deliver(i, j, t)

BackoffFairness ==
    /\ WF_backoffVars(StopFaults)
    /\ \A i \in Voters : WF_backoffVars(QuietTimer(i))
    /\ \A i \in Voters :
          WF_backoffVars(\E v \in Values : ClientRequest(i, v) /\ UNCHANGED ghost)
    /\ \A i \in Server : \A j \in Server \ {i} :   \* pairs i = j: never enabled (KRaft.tla Fairness)
          /\ WF_backoffVars(SendTo(i, j) /\ UNCHANGED ghost)
          /\ WF_backoffVars(DeliverOn(i, j) /\ UNCHANGED ghost)

BackoffLiveSpec == BackoffSpec /\ BackoffFairness

\* Planted bug for the negative configurations of the replication
\* properties: no fairness on sending Fetch requests (a follower may stop
\* fetching for ever), so ClientValueCommittedOrTruncated and
\* FollowersConverge must fail: they depend on Fetch, not on the bounds.
BackoffFairnessNoFetch ==
    /\ WF_backoffVars(StopFaults)
    /\ \A i \in Voters : WF_backoffVars(QuietTimer(i))
    /\ \A i \in Voters :
          WF_backoffVars(\E v \in Values : ClientRequest(i, v) /\ UNCHANGED ghost)
    /\ \A i \in Server : \A j \in Server \ {i} :
          /\ WF_backoffVars((BSendVoteRequest(i, j) \/ BSendBeginQuorumEpoch(i, j))
                            /\ UNCHANGED ghost)
          /\ WF_backoffVars(DeliverOn(i, j) /\ UNCHANGED ghost)

NoFetchFairnessLiveSpec == BackoffSpec /\ BackoffFairnessNoFetch

(***************************************************************************)
(*                              INVARIANTS                                 *)
(***************************************************************************)
BackoffTypeOK ==
    /\ Quiet!TypeOK
    /\ ~faultsStopped => NumInFlight <= MaxInFlight
    /\ faultsStopped \in BOOLEAN
    /\ lostLeader \in [LossKinds -> 0..MaxEpoch]

\* The quiet phase's network bound never binds: every send it allows is
\* taken with room to spare (so weak fairness on sending is faithful).
QuietBoundNeverReached == faultsStopped => NumInFlight < QuietMaxInFlight

(***************************************************************************)
(*                              LIVENESS                                   *)
(***************************************************************************)
\* A leader followed by a majority of the voters, of an epoch after e.
LeaderElectedAfterEpoch(e) ==
    \E l \in Voters : LeaderFollowedByMajority(l) /\ currentEpoch[l] > e

\* KIP-595 §"Vote" (conditions 1-3), §"EndQuorumEpoch", revision §"Leader
\* Progress Timeout": after the leader of epoch e is lost, a leader of a
\* later epoch is eventually elected and followed by a majority.
\* (lostLeader[kind] only grows: each loss is of a leader of a later epoch.)
LeaderElectedAfter(kind) ==
    lostLeader[kind] > 0 ~> LeaderElectedAfterEpoch(lostLeader[kind])

LeaderElectedAfterCrash           == LeaderElectedAfter("Crash")
LeaderElectedAfterResignation     == LeaderElectedAfter("Resignation")
LeaderElectedAfterProgressTimeout == LeaderElectedAfter("ProgressTimeout")

\* From the start (a freshly formatted quorum) a leader is eventually
\* elected and followed by a majority.
QuorumEventuallyLedByMajority == <>LeaderElectedAfterEpoch(0)

(***************************************************************************)
(* KIP-595 §"Key Concepts" (committed records are never lost) and §"Fetch" *)
(* (DivergingEpoch): a client record a leader appended at offset k is      *)
(* eventually committed at k, or truncated from every log.  A client       *)
(* record can only be appended at offsets 1..MaxLogLength.                 *)
(*                                                                         *)
(* Checked form: eventually, every client record any log holds is          *)
(* committed at its offset, from then on.  Each record is then committed   *)
(* or, from that point on, in no log at all (truncated).  With a bounded   *)
(* log (MaxLogLength) the leaders' appends end, so this is the per-record  *)
(* statement ClientValueEventuallySettles below; unlike it, the checked    *)
(* form needs no tableau (one <>[] formula instead of one leads-to per     *)
(* offset and record), which keeps the liveness check within the ci budget.*)
(***************************************************************************)
ClientRecord == [epoch : 1..MaxEpoch, value : Values]
HeldAt(k, r) == \E i \in Server : k <= Len(log[i]) /\ log[i][k] = r
CommittedAt(k, r) == k <= Len(ghostCommitted) /\ ghostCommitted[k].entry = r

ClientValueEventuallySettles ==
    \A k \in 1..MaxLogLength, r \in ClientRecord :
        HeldAt(k, r) ~> (CommittedAt(k, r) \/ ~HeldAt(k, r))

ClientValueCommittedOrTruncated ==
    <>[](\A k \in 1..MaxLogLength, r \in ClientRecord : HeldAt(k, r) => CommittedAt(k, r))

\* i follows l in l's epoch and holds l's committed prefix.
HoldsLeadersCommittedPrefix(i, l) ==
    /\ currentEpoch[i] = currentEpoch[l]
    /\ leaderId[i] = l
    /\ IsPrefix(Prefix(log[l], highWatermark[l]), log[i])

(***************************************************************************)
(* KIP-595 §"Key Concepts" (Observer: "only responsible for discovering    *)
(* the leader and replicating the log"), §"BeginQuorumEpoch": every        *)
(* observer eventually follows the elected leader and its log reaches the  *)
(* leader's high watermark, from then on.                                  *)
(***************************************************************************)
ObserverFindsLeaderAndCatchesUp ==
    \A o \in Observers :
        <>[](\E l \in Voters : LeaderFollowedByMajority(l) /\ HoldsLeadersCommittedPrefix(o, l))

(***************************************************************************)
(* KIP-595 §"Fetch" (log reconciliation): once quiet, the replicas          *)
(* converge: eventually there is a leader and every voter follows it with  *)
(* the leader's log and high watermark, from then on.                      *)
(***************************************************************************)
FollowersConverge ==
    <>[](\E l \in Voters :
            /\ role[l] = "Leader"
            /\ \A v \in Voters : /\ currentEpoch[v] = currentEpoch[l]
                                 /\ leaderId[v] = l
                                 /\ log[v] = log[l]
                                 /\ highWatermark[v] = highWatermark[l])

=============================================================================
