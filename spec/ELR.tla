-------------------------------- MODULE ELR --------------------------------
(***************************************************************************)
(* KIP-966: Eligible Leader Replicas (ELR) and Unclean Recovery, with      *)
(* asynchronous metadata.                                                  *)
(*                                                                         *)
(* One partition, replicated on every broker of `Brokers` (the replication *)
(* factor is Cardinality(Brokers)), under a single KRaft controller.       *)
(*                                                                         *)
(* What is modelled                                                        *)
(*  - brokers: registration with broker epochs and the previous broker     *)
(*    epoch from the CleanShutdownFile, fencing / unfencing, clean         *)
(*    (controlled) shutdown, unclean shutdown that loses the unflushed     *)
(*    suffix of the log;                                                   *)
(*  - metadata propagation: each broker holds its own view of the          *)
(*    partition (leader, leader epoch, partition epoch, ISR, ELR) that     *)
(*    lags behind the controller's; a broker acts on its view, so a        *)
(*    replaced leader keeps serving until it learns the new leader epoch;  *)
(*  - the partition leader: produce with acks=all and acks=1, follower     *)
(*    fetch rounds (the leader learns a follower's log end offset and      *)
(*    broker epoch from the follower's next fetch), the high watermark     *)
(*    (HWM) from what the leader has learned, AlterPartition requests      *)
(*    carrying the leader epoch, the partition epoch and the members'      *)
(*    broker epochs, with the leader's pending (maximal) ISR;              *)
(*  - the controller: AlterPartition validation (FENCED_LEADER_EPOCH,      *)
(*    INVALID_UPDATE_VERSION, INELIGIBLE_REPLICA), the partition epoch,    *)
(*    ELR update rules 1, 2a, 2b, 2c, unclean-registration cleanup,        *)
(*    LastKnownELR, LastKnownLeader, empty ISR, leader election order,     *)
(*    unclean recovery with GetReplicaLogInfo for the strategies           *)
(*    Aggressive / Balanced / None, and min.insync.replicas changes;       *)
(*  - ElrEnabled = FALSE gives the pre-KIP-966 behaviour.                  *)
(*                                                                         *)
(* The decision rules themselves are pure operators in ELRRules.tla.       *)
(* Model-checking values, symmetry and constraints live in MCELR.tla and   *)
(* tlc_configs/elr-*.cfg, never here.                                      *)
(*                                                                         *)
(* Abstractions (see docs/spec-elr.md §5 for the argument behind each):    *)
(*  A3 A follower fetch round copies the leader's whole log after          *)
(*     truncating the divergent suffix (longest common prefix); the leader *)
(*     learns the matching length the follower had BEFORE the copy (its    *)
(*     fetch offset), so the copied records count at the next fetch.       *)
(*  A4 The OS page cache is not a variable: an unclean shutdown leaves the *)
(*     log as the rest of the cluster last saw it, and the restart (log    *)
(*     recovery) keeps some prefix of length k, flushed <= k <= LEO.       *)
(*  A5 The leader epoch is bumped only when a leader is elected (Kafka     *)
(*     also bumps it when the leader becomes "none"; here an AlterPartition *)
(*     from a broker that is no longer the leader is answered              *)
(*     FENCED_LEADER_EPOCH, which is what that bump achieves).             *)
(*  A6 One controller, no controller failover; no reassignment.            *)
(*  A7 Producers use acks=all whenever the leader (by its view) accepts it *)
(*     (ISR >= min ISR) and acks=1 otherwise.                              *)
(*  A8 A restarting broker registers, catches up with the metadata and is  *)
(*     unfenced in one step; so does a running fenced broker that is       *)
(*     unfenced (Kafka unfences a broker only once it has caught up).      *)
(*  A10 Metadata is delivered "jump to latest": a broker applies the       *)
(*     controller's current partition state, never an intermediate one.    *)
(*     With LeaderCacheIsrEligibility the view also holds the broker       *)
(*     registrations of b's metadata cache (each broker's epoch, 0 when    *)
(*     fenced) as of the same catch-up; an AlterPartition response is such *)
(*     a catch-up, up to the controller's commit (Kafka's response carries *)
(*     the partition only; docs/spec-elr.md "LeaderCacheIsrEligibility").  *)
(*  A11 The topic's min.insync.replicas travels with the partition state   *)
(*     in the same metadata (a broker's view carries it).                  *)
(*  A12 A newly elected leader starts with the HWM it can vouch for: the   *)
(*     part of the consumer-visible log it holds (followers' own HWMs are  *)
(*     not modelled).                                                      *)
(* The synchronous abstractions of the first version (A1 instantaneous     *)
(* metadata, A2 no partition epoch, A9 the leader reads its followers'     *)
(* logs) are gone: those are the races real replication bugs came from.    *)
(***************************************************************************)
EXTENDS Integers, FiniteSets, Sequences, ELRRules

-----------------------------------------------------------------------------
(***************************************************************************)
(* CONSTANTS                                                               *)
(***************************************************************************)
CONSTANTS
    Brokers,          \* set of model values: the replicas of the partition
    Values,           \* set of model values: record payloads
    NoBroker,         \* model value: "no leader" / "no last known leader"
    NoReply,          \* model value: no GetReplicaLogInfo reply held
    NoMessage,        \* model value: no AlterPartition in flight

    \* --- topic / cluster configuration (KIP-966 §"Config changes")
    InitMinIsr,              \* initial min.insync.replicas
    MinIsrValues,            \* values min.insync.replicas may be changed to (contains InitMinIsr)
    ElrEnabled,              \* eligible.leader.replicas.enabled; FALSE = pre-KIP-966
    UncleanRecoveryEnabled,  \* unclean.recovery.manager.enabled; FALSE = §"Delivery plan" phase 1
    RecoveryStrategy,        \* unclean.recovery.strategy: "Aggressive" | "Balanced" | "None"
    FenceRunningBrokers,     \* the controller may fence a broker that is still running
                             \* (network partition between it and the controller)
    SyncMetadata,            \* TRUE: metadata propagation and AlterPartition round trips
                             \* complete before any other step (docs/spec-elr.md, "SyncMetadata")
    FetchTriggeredIsrExpand, \* TRUE: the leader proposes an ISR expansion only while it handles
                             \* the follower's fetch (KIP-841; Kafka's Partition.maybeExpandIsr
                             \* in updateFollowerFetchState); FALSE: at any time its guard holds
    LeaderCacheIsrEligibility, \* TRUE: a broker's view carries its metadata cache's broker
                             \* registrations, and the leader proposes only a follower its cache
                             \* has unfenced with the broker epoch of its fetch (KIP-841, KIP-903;
                             \* Kafka's Partition.isReplicaIsrEligible); FALSE: the controller
                             \* alone checks eligibility (INELIGIBLE_REPLICA)

    \* --- environment bounds: each one guards the actions named, so that a
    \*     simulator can respect exactly the same limits.
    MaxLogLen,            \* Produce: the leader's log never exceeds this length
    MaxLeaderEpoch,       \* every leader election: leaderEpoch never exceeds this
    MaxPartitionEpoch,    \* every partition change: partitionEpoch never exceeds this
    MaxBrokerEpoch,       \* RestartBroker: a broker's epoch never exceeds this
                          \* (each broker restarts at most MaxBrokerEpoch - 1 times)
    MaxRestarts,          \* RestartBroker: total restarts over all brokers
    MaxUncleanShutdowns,  \* UncleanShutdown: total unclean shutdowns in a behaviour

    \* --- bug switches: all FALSE in the normal configurations
    BugHwmOnMaximalIsr,        \* HWM min-ISR check on the maximal ISR (KIP 3-replica example)
    BugHwmIgnoresMinIsr,       \* HWM advances without the min ISR requirement (pre-KIP rule)
    BugKeepUncleanInElr,       \* unclean registration does not remove the broker from the ELR
    BugBalancedFixedReplies,   \* Balanced elects after MinISR replies (rejected alternative)
    BugAcceptStaleReplies,     \* GetReplicaLogInfo replies not fenced by broker / leader epoch
    BugLongestLogIgnoresEpoch, \* unclean recovery picks the longest log, ignoring the last epoch
    BugSkipElrRule,            \* "off", or the ELR update rule left out: "1", "2a", "2b", "2c"
    BugLastKnownElrLiteral,    \* LastKnownELR per the literal text of §"Other behaviors" 6a
    BugSkipPartitionEpochCheck, \* the controller accepts an AlterPartition with a stale partition epoch
    BugHwmOnPendingIsr,        \* the leader's HWM uses its pending ISR as if it were committed
    BugStaleLeaderAcks,        \* a replaced leader answers its acks=all purgatory as successful

    \* --- Kafka's reading (Apache Kafka 4.x's controller, docs/kafka-conformance.md
    \*     "KIP-966 controller"): all FALSE in the KIP configurations, TRUE in the
    \*     kafka-4.x judge configs (tlc_configs/elr-kafka-*.cfg)
    KafkaLeaderlessEpochBump,  \* D3: a partition change to "no leader" bumps the leader epoch
    KafkaLastKnownLeader,      \* D2: LastKnownElr holds the last known leader (no KIP LastKnownELR)
    KafkaMinIsrClearsElr,      \* D1: every min.insync.replicas change clears ELR and LastKnownElr
    KafkaRegistersFenced       \* K1: a (re)registered broker stays fenced until its next heartbeat

Strategies == {"Aggressive", "Balanced", "None"}

ASSUME
    /\ Brokers /= {} /\ Values /= {}
    /\ NoBroker \notin Brokers
    /\ MinIsrValues \subseteq Nat \ {0} /\ InitMinIsr \in MinIsrValues
    /\ ElrEnabled \in BOOLEAN /\ UncleanRecoveryEnabled \in BOOLEAN
    /\ RecoveryStrategy \in Strategies
    /\ FenceRunningBrokers \in BOOLEAN
    /\ SyncMetadata \in BOOLEAN
    /\ FetchTriggeredIsrExpand \in BOOLEAN
    /\ LeaderCacheIsrEligibility \in BOOLEAN
    /\ MaxLogLen \in Nat /\ MaxLeaderEpoch \in Nat \ {0}
    /\ MaxPartitionEpoch \in Nat
    /\ MaxBrokerEpoch \in Nat \ {0} /\ MaxRestarts \in Nat
    /\ MaxUncleanShutdowns \in Nat
    /\ \A bug \in {BugHwmOnMaximalIsr, BugHwmIgnoresMinIsr, BugKeepUncleanInElr,
                   BugBalancedFixedReplies, BugAcceptStaleReplies,
                   BugLongestLogIgnoresEpoch, BugLastKnownElrLiteral,
                   BugSkipPartitionEpochCheck, BugHwmOnPendingIsr,
                   BugStaleLeaderAcks, KafkaLeaderlessEpochBump, KafkaLastKnownLeader,
                   KafkaMinIsrClearsElr, KafkaRegistersFenced} : bug \in BOOLEAN
    /\ BugSkipElrRule \in {"off", "1", "2a", "2b", "2c"}

-----------------------------------------------------------------------------
(***************************************************************************)
(* VARIABLES                                                               *)
(*                                                                         *)
(* Broker side (one entry per broker b):                                   *)
(*   alive[b]        the broker process is running                         *)
(*   log[b]          the replica's log: a sequence of records              *)
(*                   [epoch |-> leader epoch it was written in,            *)
(*                    value |-> payload]; offset i is log[b][i]            *)
(*   flushed[b]      offsets 1..flushed[b] are on disk (fsynced); the      *)
(*                   rest of the log is in the page cache                  *)
(*   shutdownFile[b] the CleanShutdownFile: the broker epoch written at a  *)
(*                   clean shutdown, or -1 when there is no file (it is    *)
(*                   removed when the log manager starts)                  *)
(*                                                                         *)
(* Controller side (the partition record in the metadata log):            *)
(*   brokerEpoch[b]  the broker epoch in the controller's registration     *)
(*                   record (equal to the running broker's own epoch)      *)
(*   fenced[b]       the controller has fenced b                           *)
(*   leader          the partition leader, or NoBroker                     *)
(*   leaderEpoch     the partition leader epoch                            *)
(*   partitionEpoch  the partition epoch: +1 on every change of the        *)
(*                   partition record (leader, epochs, ISR, ELR,           *)
(*                   LastKnownELR, LastKnownLeader)                        *)
(*   isr             the ISR committed by the controller                   *)
(*   elr             the Eligible Leader Replicas                          *)
(*   lastKnownElr    the LastKnownELR                                      *)
(*   lastKnownLeader the LastKnownLeader, or NoBroker                      *)
(*   minIsr          the topic's min.insync.replicas                       *)
(*   replies[b]      the GetReplicaLogInfo reply the controller holds from *)
(*                   b ([brokerEpoch, leaderEpoch, lastEpoch, leo]) or     *)
(*                   NoReply                                               *)
(*                                                                         *)
(* A broker's own state of the partition (one entry per broker b):        *)
(*   metadata[b]     b's view [leader, leaderEpoch, partitionEpoch, isr,   *)
(*                   elr, minIsr]: the controller's partition record (and  *)
(*                   the topic's min ISR) as b last                        *)
(*                   learned it (metadata propagation or its own           *)
(*                   AlterPartition response); EmptyView while b is down.  *)
(*                   With LeaderCacheIsrEligibility also `registrations`:  *)
(*                   the broker registrations of b's metadata cache        *)
(*                   (Registrations below) as of the same catch-up        *)
(*   hwm[b]          the HWM b serves as leader (offsets 1..hwm[b] are     *)
(*                   visible to its consumers); 0 unless b acts as leader  *)
(*   pendingIsr[b]   the ISR proposed by b's outstanding AlterPartition,   *)
(*                   {} when none; b's maximal ISR is                      *)
(*                   metadata[b].isr \cup pendingIsr[b]                    *)
(*   pendingAcks[b]  offsets of acks=all produce requests waiting in b's   *)
(*                   purgatory                                             *)
(*   followerState[b][f]  what b, as leader, learned from f's last fetch:  *)
(*                   [leo, brokerEpoch] (leo = the length of f's log that  *)
(*                   matched b's log); Unknown = [leo |-> 0,               *)
(*                   brokerEpoch |-> 0]                                    *)
(*   alterPartition[b]  b's AlterPartition in flight (one at a time): a    *)
(*                   Request to the controller, the controller's Response, *)
(*                   or NoMessage                                          *)
(*                                                                         *)
(* Ghost / history variables (observers, not part of the protocol):        *)
(*   acked             set of <<offset, record>> acknowledged to acks=all  *)
(*                     producers (by any broker acting as leader)          *)
(*   committedLog      the consumer-visible log: the longest prefix below  *)
(*                     an HWM that consumers were served, trimmed to what  *)
(*                     a new leader holds when it takes over               *)
(*   uncleanShutdowns  number of unclean shutdowns so far                  *)
(*   lostCommitted[b]  the counted records (<<offset, record>>: committed, *)
(*                     or reported to a leader in a fetch) that b          *)
(*                     held and lost in a restart after an unclean         *)
(*                     shutdown, and has not fetched back since: b counts  *)
(*                     as a KIP "data loss unclean shutdown event" while   *)
(*                     this set is not empty                               *)
(***************************************************************************)
VARIABLES
    alive, log, flushed, shutdownFile,
    brokerEpoch, fenced, leader, leaderEpoch, partitionEpoch, isr, elr, lastKnownElr,
    lastKnownLeader, minIsr, replies,
    metadata, hwm, pendingIsr, pendingAcks, followerState, alterPartition,
    acked, committedLog, uncleanShutdowns, lostCommitted

brokerVars     == <<alive, log, flushed, shutdownFile>>
controllerVars == <<brokerEpoch, fenced, leader, leaderEpoch, partitionEpoch, isr, elr,
                    lastKnownElr, lastKnownLeader, minIsr, replies>>
replicaVars    == <<metadata, hwm, pendingIsr, pendingAcks, followerState, alterPartition>>
ghostVars      == <<acked, committedLog, uncleanShutdowns, lostCommitted>>
vars == <<brokerVars, controllerVars, replicaVars, ghostVars>>

\* the ghosts a controller step leaves alone (an election may trim committedLog)
otherGhostVars == <<acked, uncleanShutdowns, lostCommitted>>

\* the controller's partition record
partitionVars == <<leader, leaderEpoch, partitionEpoch, isr, elr, lastKnownElr, lastKnownLeader>>

-----------------------------------------------------------------------------
(***************************************************************************)
(* Derived values                                                          *)
(***************************************************************************)
Record == [epoch : 1..MaxLeaderEpoch, value : Values]
Reply  == [brokerEpoch : 1..MaxBrokerEpoch, leaderEpoch : 1..MaxLeaderEpoch,
           lastEpoch : 0..MaxLeaderEpoch, leo : 0..MaxLogLen]
View   == IF LeaderCacheIsrEligibility
          THEN [leader : Brokers \cup {NoBroker}, leaderEpoch : 1..MaxLeaderEpoch,
                partitionEpoch : 0..MaxPartitionEpoch, isr : SUBSET Brokers,
                elr : SUBSET Brokers, minIsr : MinIsrValues,
                registrations : [Brokers -> 0..MaxBrokerEpoch]]
          ELSE [leader : Brokers \cup {NoBroker}, leaderEpoch : 1..MaxLeaderEpoch,
                partitionEpoch : 0..MaxPartitionEpoch, isr : SUBSET Brokers,
                elr : SUBSET Brokers, minIsr : MinIsrValues]
FollowerInfo == [leo : 0..MaxLogLen, brokerEpoch : 0..MaxBrokerEpoch]

\* KIP-966 §"Public interfaces" / Kafka's AlterPartition error codes.
AlterPartitionErrors == {"NONE", "FENCED_LEADER_EPOCH", "INVALID_UPDATE_VERSION",
                         "INELIGIBLE_REPLICA"}
AlterPartitionRequest ==
    [type : {"Request"}, leaderEpoch : 1..MaxLeaderEpoch,
     partitionEpoch : 0..MaxPartitionEpoch, isr : SUBSET Brokers,
     brokerEpochs : [Brokers -> 0..MaxBrokerEpoch]]
AlterPartitionResponse ==
    [type : {"Response"}, error : AlterPartitionErrors, partition : View]

ReplicationFactor == Cardinality(Brokers)
MaxOf(S) == CHOOSE m \in S : \A x \in S : m >= x
EffMinIsr == EffectiveMinIsr(minIsr, ReplicationFactor)

Unfenced   == {b \in Brokers : ~fenced[b]}
LeaderLive == leader /= NoBroker /\ alive[leader]

\* The controller's partition state as a broker sees it, now and after the step.
\* The view carries the topic's min.insync.replicas (no step that writes
\* ViewAfter changes it): a ConfigRecord in the same
\* metadata log, so a broker never sees a config change before the partition
\* changes that preceded it.
\* LeaderCacheIsrEligibility: the view also carries the broker registrations of
\* the metadata log (RegisterBrokerRecord, BrokerRegistrationChangeRecord): each
\* broker's epoch, 0 for a fenced one -- what KIP-841's leader reads from its
\* metadata cache ("The leader will consider only active (not fenced nor in
\* controlled shutdown) replicas to be eligible to join the ISR. It will rely on
\* the metadata cache to get this information via the metadata log"; a
\* controlled shutdown fences at once here, CleanShutdown) and KIP-903's leader
\* compares with the broker epoch of the follower's fetch.  Without the switch
\* the view has no such field (the records are exactly the ones before it).
\* (The switch is tested at the top of each definition, so that without it the
\* views are built exactly as before it, at the same cost for TLC.)
Registrations   == [m \in Brokers |-> IF fenced[m] THEN 0 ELSE brokerEpoch[m]]
NoRegistrations == [m \in Brokers |-> 0]
CurrentView ==
    IF LeaderCacheIsrEligibility
    THEN [leader |-> leader, leaderEpoch |-> leaderEpoch, partitionEpoch |-> partitionEpoch,
          isr |-> isr, elr |-> elr, minIsr |-> minIsr, registrations |-> Registrations]
    ELSE [leader |-> leader, leaderEpoch |-> leaderEpoch, partitionEpoch |-> partitionEpoch,
          isr |-> isr, elr |-> elr, minIsr |-> minIsr]
\* the partition after the step, with the registrations r after it
ViewAfterWith(r) ==
    IF LeaderCacheIsrEligibility
    THEN [leader |-> leader', leaderEpoch |-> leaderEpoch', partitionEpoch |-> partitionEpoch',
          isr |-> isr', elr |-> elr', minIsr |-> minIsr, registrations |-> r]
    ELSE [leader |-> leader', leaderEpoch |-> leaderEpoch', partitionEpoch |-> partitionEpoch',
          isr |-> isr', elr |-> elr', minIsr |-> minIsr]
ViewAfter   == ViewAfterWith(Registrations)   \* a step that changes no registration
\* A down broker has no metadata cache; an error response carries no partition.
EmptyView   ==
    IF LeaderCacheIsrEligibility
    THEN [leader |-> NoBroker, leaderEpoch |-> 1, partitionEpoch |-> 0, isr |-> {}, elr |-> {},
          minIsr |-> InitMinIsr, registrations |-> NoRegistrations]
    ELSE [leader |-> NoBroker, leaderEpoch |-> 1, partitionEpoch |-> 0, isr |-> {}, elr |-> {},
          minIsr |-> InitMinIsr]

\* The effective min ISR a broker applies: the one of its view.
ViewMinIsr(view) == EffectiveMinIsr(view.minIsr, ReplicationFactor)

Unknown     == [leo |-> 0, brokerEpoch |-> 0]
NoFollowers == [f \in Brokers |-> Unknown]

\* b acts as the partition leader: it runs and its own view names it leader.
ActsAsLeader(b) == alive[b] /\ metadata[b].leader = b

\* The leader of the controller's current leader epoch, acting on it.
CurrentLeaderActing == LeaderLive /\ ActsAsLeader(leader)
                       /\ metadata[leader].leaderEpoch = leaderEpoch

\* Restarts so far: every registration after the first bumps the broker epoch.
RECURSIVE SumOfEpochBumps(_)
SumOfEpochBumps(S) ==
    IF S = {} THEN 0
    ELSE LET x == CHOOSE x \in S : TRUE    \* any order: the sum does not depend on it
         IN  brokerEpoch[x] - 1 + SumOfEpochBumps(S \ {x})
Restarts == SumOfEpochBumps(Brokers)

\* KIP-966 §"Motivation": "MinISR-1 tolerance to data loss unclean shutdown
\* events".  With changing min ISR, the smallest effective value counts.  An
\* event counts while it matters: a broker that lost committed records in an
\* unclean restart and has not fetched them back (an uncommitted tail lost, or
\* a loss repaired by catching up again, does not count).
ToleratedDataLossShutdowns ==
    MinOf({EffectiveMinIsr(m, ReplicationFactor) : m \in MinIsrValues}) - 1
BrokersMissingCommittedData == {b \in Brokers : lostCommitted[b] /= {}}
WithinTolerance == Cardinality(BrokersMissingCommittedData) <= ToleratedDataLossShutdowns

\* log lg holds the record e = <<offset, record>>
HoldsRecord(lg, e) == e[1] <= Len(lg) /\ lg[e[1]] = e[2]

\* The counted records a broker still misses after the logs became newLog: a
\* lost record stops counting once b holds it again, or once nobody can ever
\* rely on it: it was never acknowledged, is not committed and no replica
\* holds it any more.
StillMissing(newLog) ==
    [b \in Brokers |-> {e \in lostCommitted[b] :
                          /\ ~HoldsRecord(newLog[b], e)
                          /\ \/ e \in acked
                             \/ HoldsRecord(committedLog, e)
                             \/ \E c \in Brokers : HoldsRecord(newLog[c], e)}]

\* How much of b's log the cluster may count on: the committed records b held,
\* and the records b reported to a leader in a fetch (a leader's HWM may count
\* them until it learns that b restarted -- docs/spec-elr.md, finding A1).
CountedPrefix(b) ==
    LET reported == MaxOf({followerState[l][b].leo : l \in Brokers})
        held     == CommonPrefixLen(log[b], committedLog)
        n        == IF reported > held THEN reported ELSE held
    IN  IF n < Len(log[b]) THEN n ELSE Len(log[b])

\* GetReplicaLogInfo response content of broker b right now: the leader epoch
\* is the one in b's metadata cache (KIP-966 §"GetReplicaLogInfo Response").
LogInfo(b) == [brokerEpoch |-> brokerEpoch[b], leaderEpoch |-> metadata[b].leaderEpoch,
               lastEpoch   |-> LastEpoch(log[b]), leo |-> Len(log[b])]

-----------------------------------------------------------------------------
(***************************************************************************)
(* Controller: partition changes and leader election.                      *)
(*                                                                         *)
(* Every controller action first computes the ELR update `st` =            *)
(* [isr, elr, lastKnownElr] (ELRRules!ElrUpdate), then runs the election   *)
(* (ElectionOutcomes), then writes the result with ApplyOutcome.           *)
(* An outcome is [leader, elected, isr, elr, lastKnownElr,                *)
(* lastKnownLeader].  Brokers learn the result later (ReceiveMetadata).    *)
(***************************************************************************)
StateOf == [isr |-> isr, elr |-> elr, lastKnownElr |-> lastKnownElr]

\* KIP-966 §"Other behaviors" 7b: "The controller will record the last ISR
\* member (the leader) when it is fenced."  The ISR loses one member at a time,
\* so when it becomes empty the old ISR is a singleton.
LastKnownLeaderAfter(st) ==
    IF ElrEnabled /\ st.isr = {} /\ isr /= {}
    THEN CHOOSE x \in isr : TRUE          \* isr is a singleton here
    ELSE lastKnownLeader

\* KafkaLastKnownLeader (Kafka's PartitionChangeBuilder.canElectLastKnownLeader,
\* useLastKnownLeaderInBalancedRecovery = true): with ELR enabled, the last known
\* leader recorded BEFORE this step is elected when the target ISR and ELR are empty
\* and it is an acceptable leader -- whatever the recovery strategy (so also before an
\* unclean election, D4).  KIP-966 §"Delivery plan": "the controller will elect the
\* last known leader ... once it is unfenced".
KafkaLastKnownLeaderCandidates(st, eligible) ==
    IF ElrEnabled /\ st.isr = {} /\ st.elr = {} /\ lastKnownLeader \in eligible
    THEN {lastKnownLeader}
    ELSE {}

\* KafkaLastKnownLeader: the last known leader after outcome o
\* (PartitionChangeBuilder.maybeUpdateLastKnownLeader): the leader is recorded when
\* the partition becomes leaderless (its LastKnownElr empty), cleared when a leader is
\* elected, and otherwise kept (the field is not updated while there is no leader).
KafkaLastKnownLeaderAfter(o) ==
    CASE o.leader /= NoBroker -> NoBroker
      [] leader /= NoBroker /\ lastKnownLeader = NoBroker -> leader
      [] OTHER -> lastKnownLeader

\* Elect c.  An ISR member keeps the ISR; an ELR member is "added to ISR, and
\* removed from ELR" (controller behavior 3); anyone else is an unclean
\* election: ISR = {c}, and the ELR fields are cleaned (as Kafka does).
\* KIP-966 §"Other behaviors" 7c: LastKnownLeader "will be cleaned when a new
\* leader is elected".
ElectOutcome(st, c) ==
    CASE c \in st.isr ->
            [leader |-> c, elected |-> TRUE, isr |-> st.isr, elr |-> st.elr,
             lastKnownElr |-> st.lastKnownElr, lastKnownLeader |-> NoBroker]
      [] c \in st.elr ->
            [leader |-> c, elected |-> TRUE, isr |-> {c}, elr |-> st.elr \ {c},
             lastKnownElr |-> st.lastKnownElr, lastKnownLeader |-> NoBroker]
      [] OTHER ->
            [leader |-> c, elected |-> TRUE, isr |-> {c}, elr |-> {},
             lastKnownElr |-> {}, lastKnownLeader |-> NoBroker]

\* The possible outcomes of the controller's election after the ELR update st,
\* when `eligible` are the unfenced brokers and `incumbent` is the leader that
\* may stay (NoBroker if the leader lost its leadership in this step).
\* KIP-966 §"Unclean recovery" election order steps 1 and 2 (and §"Delivery
\* plan" LastKnownLeader); steps 3 and 4 are the unclean actions below.
\* An outcome is [leader, elected, isr, elr, lastKnownElr, lastKnownLeader];
\* `elected` says a leader election took place (new leader epoch).
ElectionOutcomes(st, eligible, incumbent) ==
    LET lkl   == LastKnownLeaderAfter(st)
        cands == CleanCandidates(st.isr, st.elr, eligible, ElrEnabled)
                 \cup IF KafkaLastKnownLeader
                     THEN KafkaLastKnownLeaderCandidates(st, eligible)
                     ELSE LastKnownLeaderCandidates(st.isr, st.elr, lkl, eligible,
                              RecoveryStrategy, UncleanRecoveryEnabled, ElrEnabled)
    IN  IF incumbent /= NoBroker /\ incumbent \in st.isr /\ incumbent \in eligible
        THEN {[leader |-> incumbent, elected |-> FALSE, isr |-> st.isr, elr |-> st.elr,
               lastKnownElr |-> st.lastKnownElr, lastKnownLeader |-> lkl]}
        ELSE IF cands = {}
        THEN {[leader |-> NoBroker, elected |-> FALSE, isr |-> st.isr, elr |-> st.elr,
               lastKnownElr |-> st.lastKnownElr, lastKnownLeader |-> lkl]}
        ELSE {ElectOutcome(st, c) : c \in cands}

(***************************************************************************)
(* Write an outcome into the partition record.  Every change bumps the     *)
(* partition epoch (Kafka's PartitionChangeRecord); an election also bumps *)
(* the leader epoch.  Elections respect MaxLeaderEpoch, changes respect    *)
(* MaxPartitionEpoch.  The ghost committedLog follows the elected leader:  *)
(* what it holds of the consumer-visible log is what stays committed (A12; *)
(* the part it lacks is lost, which the loss checks judge).  `lg` is the   *)
(* log function after the step.                                            *)
(***************************************************************************)
ApplyPartition(o) ==
    LET lke     == IF KafkaLastKnownLeader THEN {} ELSE o.lastKnownElr
        lkl     == IF KafkaLastKnownLeader THEN KafkaLastKnownLeaderAfter(o)
                   ELSE o.lastKnownLeader
        \* KafkaLeaderlessEpochBump: Kafka's PartitionChangeRecord sets leader -1 and
        \* PartitionRegistration.merge bumps the leader epoch for every leader change
        bump    == \/ o.elected
                   \/ KafkaLeaderlessEpochBump /\ o.leader = NoBroker /\ leader /= NoBroker
        changed == \/ o.elected \/ o.leader /= leader \/ o.isr /= isr \/ o.elr /= elr
                   \/ lke /= lastKnownElr
                   \/ lkl /= lastKnownLeader
    IN  /\ bump => leaderEpoch < MaxLeaderEpoch
        /\ changed => partitionEpoch < MaxPartitionEpoch
        /\ leader'          = o.leader
        /\ leaderEpoch'     = IF bump THEN leaderEpoch + 1 ELSE leaderEpoch
        /\ partitionEpoch'  = IF changed THEN partitionEpoch + 1 ELSE partitionEpoch
        /\ isr'             = o.isr
        /\ elr'             = o.elr
        /\ lastKnownElr'    = lke
        /\ lastKnownLeader' = lkl

CommittedAfter(o, lg) ==
    IF o.elected THEN SubSeq(committedLog, 1, CommonPrefixLen(lg[o.leader], committedLog))
    ELSE committedLog

ApplyOutcome(o, lg) == ApplyPartition(o) /\ committedLog' = CommittedAfter(o, lg)

\* The ELR update when the controller takes b out of the ISR (b is fenced, or
\* a new incarnation of b registers).  `unclean` = {b} when the controller
\* detected an unclean shutdown: b is then also dropped from the ELR.
RemovalState(b, unclean) ==
    IF b \in isr \/ unclean /= {}
    THEN ElrUpdate(isr, elr, lastKnownElr, isr \ {b}, EffMinIsr, unclean, ElrEnabled,
                   BugSkipElrRule, BugLastKnownElrLiteral)
    ELSE StateOf

\* The controller fences b: b leaves the ISR through the ELR update, and a new
\* leader is elected if b led.
FenceOutcomes(b) == ElectionOutcomes(RemovalState(b, {}), Unfenced \ {b}, leader)

-----------------------------------------------------------------------------
(***************************************************************************)
(* The leader's high watermark rule, applied by a broker b acting as       *)
(* leader wherever Kafka's leader recomputes it (maybeIncrementLeaderHW:   *)
(* after an append, a follower fetch, an ISR change in its view, becoming  *)
(* leader).  KIP-966 §"Additional High Watermark advancement requirement": *)
(* the HWM advances only when the ISR "persisted by the controller" -- as  *)
(* far as b has learned it, metadata[b].isr -- has at least min ISR        *)
(* members, and only up to what every member of b's maximal ISR            *)
(* (view ISR \cup pending ISR) is KNOWN to have: the follower log end      *)
(* offsets b learned from their fetches, never their actual logs.          *)
(* acks=all requests below the new HWM are answered: acknowledged if the   *)
(* ISR is at least min ISR, else NOT_ENOUGH_REPLICAS_AFTER_APPEND.         *)
(* BugHwmOnPendingIsr: the pending ISR replaces the committed one (a       *)
(* shrink counts before the controller committed it).                      *)
(* Arguments are the values after the step; the result is the new         *)
(* [hwm, committedLog, acked, pendingAcks] of/for b.                       *)
(***************************************************************************)
HwmQuorum(view, pend) ==
    IF BugHwmOnPendingIsr /\ pend /= {} THEN pend ELSE view.isr \cup pend
HwmIsr(view, pend) ==
    IF BugHwmOnPendingIsr /\ pend /= {} THEN pend ELSE view.isr

LeaderHwm(b, lg, view, pend, fs, effMin, h, cl, ack, pAcks) ==
    LET cand    == MinOf({Len(lg[b])} \cup {fs[m].leo : m \in HwmQuorum(view, pend) \ {b}})
        isrSize == Cardinality(HwmIsr(view, pend))
        advance == /\ cand > h
                   /\ HwmMinIsrRequirementMet(isrSize, Cardinality(HwmQuorum(view, pend)),
                          effMin, BugHwmOnMaximalIsr, BugHwmIgnoresMinIsr)
        newHwm  == IF advance THEN cand ELSE h
        done    == {o \in pAcks : o <= newHwm}
    IN  [hwm          |-> newHwm,
         committedLog |-> IF advance /\ newHwm > Len(cl) THEN SubSeq(lg[b], 1, newHwm) ELSE cl,
         acked        |-> IF advance /\ isrSize >= effMin
                          THEN ack \cup {<<o, lg[b][o]>> : o \in done}
                          ELSE ack,
         pendingAcks  |-> pAcks \ done]

\* Write b's leader-side variables from a LeaderHwm result.
SetLeaderHwm(b, hu) ==
    /\ hwm'          = [hwm EXCEPT ![b] = hu.hwm]
    /\ committedLog' = hu.committedLog
    /\ acked'        = hu.acked
    /\ pendingAcks'  = [pendingAcks EXCEPT ![b] = hu.pendingAcks]

(***************************************************************************)
(* Broker b (running) installs the partition view nv (new metadata, or its *)
(* own AlterPartition response); lg is the log function after the step.    *)
(* A new partition record (a new partition epoch) replaces the pending ISR *)
(* with the committed state (Kafka's Partition.makeLeader ->               *)
(* updateAssignmentAndIsr -> CommittedPartitionState, or                   *)
(* handleAlterPartitionUpdate); a late response for the replaced state is  *)
(* then ignored.  KIP-966 §"Other behaviors" 2 (min ISR config change): a  *)
(* change of min.insync.replicas alone is a topic config, not part of the  *)
(* partition record -- it produces no PartitionChangeRecord, Kafka never   *)
(* calls makeLeader for it, and the leader's pending ISR (PendingExpandIsr *)
(* / PendingShrinkIsr) survives: here, a view that differs from b's only   *)
(* in minIsr (same partition epoch) keeps pendingIsr[b], and the HWM rule  *)
(* is re-applied with it.  When the controller's min ISR change also       *)
(* changes the partition record (ELR update, new partition epoch), the     *)
(* leader learns that record and its pending state is replaced.  So does   *)
(* a view that differs only in the broker registrations                    *)
(* (LeaderCacheIsrEligibility): a broker fenced or unfenced outside the    *)
(* partition record is no partition change either.                         *)
(*  - b stays leader in the same leader epoch: it keeps its HWM, purgatory *)
(*    and follower states and reapplies the HWM rule to the new ISR;       *)
(*  - b starts leading a new leader epoch: follower states unknown, empty  *)
(*    purgatory, the HWM it can vouch for (abstraction A12);               *)
(*  - b is not the leader: no HWM, no follower states; its purgatory is    *)
(*    failed with NOT_LEADER_OR_FOLLOWER -- or, with BugStaleLeaderAcks,   *)
(*    answered as successful because the records are in its local log.    *)
(***************************************************************************)
InstallViewFrom(b, nv, lg, cl0) ==
    LET old      == metadata[b]
        leads    == nv.leader = b
        sameTerm == old.leader = b /\ leads /\ nv.leaderEpoch = old.leaderEpoch
        base     == IF sameTerm THEN hwm[b]
                    ELSE IF leads THEN CommonPrefixLen(lg[b], cl0) ELSE 0
        cl       == IF leads /\ ~sameTerm THEN SubSeq(cl0, 1, base) ELSE cl0
        staleAck == IF BugStaleLeaderAcks /\ old.leader = b /\ ~sameTerm
                    THEN {<<o, lg[b][o]>> : o \in {x \in pendingAcks[b] : x <= Len(lg[b])}}
                    ELSE {}
        fs       == IF sameTerm THEN followerState[b] ELSE NoFollowers
        pAcks    == IF sameTerm THEN pendingAcks[b] ELSE {}
        \* only the topic's min ISR (or the broker registrations) changed: the
        \* AlterPartition in flight stays pending
        pend     == IF sameTerm /\ nv.partitionEpoch = old.partitionEpoch /\ nv /= old
                    THEN pendingIsr[b] ELSE {}
        hu       == IF leads
                    THEN LeaderHwm(b, lg, nv, pend, fs, ViewMinIsr(nv), base, cl, acked \cup staleAck, pAcks)
                    ELSE [hwm |-> 0, committedLog |-> cl, acked |-> acked \cup staleAck,
                          pendingAcks |-> {}]
    IN  /\ metadata'      = [metadata EXCEPT ![b] = nv]
        /\ pendingIsr'    = [pendingIsr EXCEPT ![b] = pend]
        /\ followerState' = [followerState EXCEPT ![b] = fs]
        /\ SetLeaderHwm(b, hu)

InstallView(b, nv, lg) == InstallViewFrom(b, nv, lg, committedLog)

\* Broker b stops: its in-memory partition state is gone.  A request it sent
\* may still reach the controller; a response to it is lost.
BrokerStops(b) ==
    /\ metadata'       = [metadata EXCEPT ![b] = EmptyView]
    /\ hwm'            = [hwm EXCEPT ![b] = 0]
    /\ pendingIsr'     = [pendingIsr EXCEPT ![b] = {}]
    /\ pendingAcks'    = [pendingAcks EXCEPT ![b] = {}]
    /\ followerState'  = [followerState EXCEPT ![b] = NoFollowers]
    /\ alterPartition' = [alterPartition EXCEPT ![b] =
                             IF @ /= NoMessage /\ @.type = "Request" THEN @ ELSE NoMessage]

-----------------------------------------------------------------------------
(***************************************************************************)
(* Initial state: every broker registered (epoch 1), unfenced and running, *)
(* empty logs, ISR = all replicas, some replica is the leader in epoch 1,  *)
(* and every broker knows it.                                              *)
(***************************************************************************)
Init ==
    /\ alive           = [b \in Brokers |-> TRUE]
    /\ log             = [b \in Brokers |-> <<>>]
    /\ flushed         = [b \in Brokers |-> 0]
    /\ shutdownFile    = [b \in Brokers |-> -1]
    /\ brokerEpoch     = [b \in Brokers |-> 1]
    /\ fenced          = [b \in Brokers |-> FALSE]
    /\ leader          \in Brokers
    /\ leaderEpoch     = 1
    /\ partitionEpoch  = 0
    /\ isr             = Brokers
    /\ elr             = {}
    /\ lastKnownElr    = {}
    /\ lastKnownLeader = NoBroker
    /\ minIsr          = InitMinIsr
    /\ replies         = [b \in Brokers |-> NoReply]
    /\ metadata        = [b \in Brokers |-> CurrentView]
    /\ hwm             = [b \in Brokers |-> 0]
    /\ pendingIsr      = [b \in Brokers |-> {}]
    /\ pendingAcks     = [b \in Brokers |-> {}]
    /\ followerState   = [b \in Brokers |-> NoFollowers]
    /\ alterPartition  = [b \in Brokers |-> NoMessage]
    /\ acked           = {}
    /\ committedLog    = <<>>
    /\ uncleanShutdowns  = 0
    /\ lostCommitted     = [b \in Brokers |-> {}]

(***************************************************************************)
(* SyncMetadata (a model-checking abstraction level, not a Kafka setting;  *)
(* docs/spec-elr.md "SyncMetadata"): when TRUE, the propagation steps --   *)
(* ReceiveMetadata, HandleAlterPartition, HandleAlterPartitionResponse --  *)
(* run to completion before any other step: every running unfenced broker  *)
(* holds the controller's current view and no AlterPartition is in flight *)
(* (Settled) whenever a client, broker, controller or environment step     *)
(* happens.  The races between a lagging view and the other steps are then *)
(* out of the model (a fenced running broker still keeps its stale view),  *)
(* and a fetch round counts the records it copies at once (FollowerFetch), *)
(* which keeps the replication-factor 3 and 4 models small enough for the  *)
(* ci profile (docs/spec-elr.md §6); the asynchronous races                *)
(* are checked with SyncMetadata = FALSE.  The liveness configs use        *)
(* SyncMetadata = FALSE too: the gate is a scheduling restriction of the   *)
(* model checker, not a behaviour whose fairness the KIP describes.        *)
(***************************************************************************)
Settled ==
    /\ \A b \in Brokers : alterPartition[b] = NoMessage
    /\ \A b \in Brokers : (alive[b] /\ ~fenced[b]) => metadata[b] = CurrentView

SyncGate == SyncMetadata => Settled

-----------------------------------------------------------------------------
(***************************************************************************)
(* Leader and followers                                                    *)
(***************************************************************************)

\* KIP-966 §"Additional High Watermark advancement requirement" (recap of
\* acks): "For ack=1 requests, the server should respond when the message is
\* persisted in the leader's local log. For ack=all requests, the server should
\* respond when the message is persisted in all the ISR members' local log and
\* the size of the ISR member is larger than min ISR."  An acks=all request is
\* rejected (NOT_ENOUGH_REPLICAS) while the ISR (in b's view) is below min
\* ISR, so the producer then falls back to acks=1 (abstraction A7).  An
\* accepted acks=all request waits in b's purgatory for the HWM.  Any broker
\* whose view names it leader accepts produce requests -- also a replaced
\* leader that has not learned the new leader epoch yet.
Produce(b, v) ==
    /\ SyncGate
    /\ ActsAsLeader(b)
    /\ Len(log[b]) < MaxLogLen
    /\ LET newLog  == [log EXCEPT ![b] = Append(@, [epoch |-> metadata[b].leaderEpoch,
                                                      value |-> v])]
           newAcks == IF Cardinality(metadata[b].isr) >= ViewMinIsr(metadata[b])
                      THEN pendingAcks[b] \cup {Len(newLog[b])}
                      ELSE pendingAcks[b]
       IN  /\ log' = newLog
           /\ SetLeaderHwm(b, LeaderHwm(b, newLog, metadata[b], pendingIsr[b], followerState[b],
                                        ViewMinIsr(metadata[b]), hwm[b], committedLog, acked,
                                        newAcks))
    /\ UNCHANGED <<alive, flushed, shutdownFile, controllerVars, metadata, pendingIsr,
                   followerState, alterPartition, uncleanShutdowns, lostCommitted>>

\* The parts of f's fetch round at l (FollowerFetch; FetchAndProposeIsrExpand).
\* The round happens when l is the leader of f's view, acts as leader, and both
\* views agree on the leader epoch.
CanFetch(f, l) ==
    /\ SyncGate
    /\ alive[f]
    /\ l = metadata[f].leader
    /\ l /= NoBroker /\ l /= f
    /\ ActsAsLeader(l)
    /\ metadata[l].leaderEpoch = metadata[f].leaderEpoch
\* f's fetch offset: the part of f's log matching l's
FetchKeep(f, l) == CommonPrefixLen(log[f], log[l])
\* the logs after the round: f truncated its divergent suffix and copied l's log
FetchedLog(f, l) == [log EXCEPT ![f] = log[l]]
\* l's record of its followers after the round; with SyncMetadata the copied
\* records count at once (the first version's A9)
FetchedFollowers(f, l) ==
    [followerState[l] EXCEPT ![f] = [leo |-> IF SyncMetadata THEN Len(log[l]) ELSE FetchKeep(f, l),
                                     brokerEpoch |-> brokerEpoch[f]]]
\* the round's writes on f's side (fetched records are not flushed yet)
FetchWrites(f, l) ==
    /\ log'           = FetchedLog(f, l)
    /\ flushed'       = [flushed EXCEPT ![f] = IF @ < FetchKeep(f, l) THEN @ ELSE FetchKeep(f, l)]
    /\ lostCommitted' = StillMissing(FetchedLog(f, l))   \* caught up again?

\* KIP-966 §"Broker behaviors": "Both the follower and the leader don't have
\* any new behavior to handle ELR. They still refer to ISR for decision
\* making."  One fetch round of follower f (fenced or not: fencing is the
\* controller's view) to the leader l of f's view.  Kafka's Fetch carries the
\* follower's current leader epoch (KIP-320), and the leader answers
\* FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH unless it equals its own, so a
\* round happens only when both views agree on the epoch and l acts as
\* leader.  l learns f's fetch offset -- the part of f's log matching l's --
\* and f's broker epoch (KIP-903); f truncates its divergent suffix and
\* copies l's log (abstraction A3); fetched records are not flushed yet.  l
\* then applies the HWM rule: the records copied now count at f's next fetch.
\* A round that changes nothing (the leader long-polls) is not a step.
FollowerFetch(f) ==
    LET l == metadata[f].leader IN
    /\ CanFetch(f, l)
    /\ LET newLog == FetchedLog(f, l)
           fs     == FetchedFollowers(f, l)
       IN  /\ FetchWrites(f, l)
           /\ followerState' = [followerState EXCEPT ![l] = fs]
           /\ SetLeaderHwm(l, LeaderHwm(l, newLog, metadata[l], pendingIsr[l], fs, ViewMinIsr(metadata[l]),
                                        hwm[l], committedLog, acked, pendingAcks[l]))
    /\ ~UNCHANGED <<log, followerState, hwm, acked, pendingAcks>>
    /\ UNCHANGED <<alive, shutdownFile, controllerVars, metadata, pendingIsr, alterPartition,
                   uncleanShutdowns>>

\* KIP-966 §"Other behaviors" / Kafka's metadata propagation: a running broker
\* applies the controller's current partition record (abstraction A10).  A
\* fenced running broker is cut off from the controller (a network
\* partition): it learns the metadata when it is unfenced (UnfenceBroker).
ReceiveMetadata(b) ==
    /\ alive[b] /\ ~fenced[b]
    /\ metadata[b] /= CurrentView
    /\ InstallView(b, CurrentView, log)
    /\ UNCHANGED <<brokerVars, controllerVars, alterPartition, uncleanShutdowns,
                   lostCommitted>>

-----------------------------------------------------------------------------
(***************************************************************************)
(* AlterPartition: the leader proposes an ISR in a request carrying its    *)
(* leader epoch, the partition epoch of its view and the broker epochs it  *)
(* learned for the members (KIP-903; 0 = unknown, not checked); the        *)
(* controller validates and commits it; the leader applies the response.   *)
(***************************************************************************)
\* b's AlterPartition request for the ISR `proposed`, fs = b's follower states.
AlterPartitionRequestOf(b, proposed, fs) ==
    [type           |-> "Request",
     leaderEpoch    |-> metadata[b].leaderEpoch,
     partitionEpoch |-> metadata[b].partitionEpoch,
     isr            |-> proposed,
     brokerEpochs   |-> [m \in Brokers |->
                           IF m = b THEN brokerEpoch[b]
                           ELSE IF m \in proposed THEN fs[m].brokerEpoch
                           ELSE 0]]

SendAlterPartition(b, proposed) ==
    /\ pendingIsr'     = [pendingIsr EXCEPT ![b] = proposed]
    /\ alterPartition' = [alterPartition EXCEPT ![b] =
                             AlterPartitionRequestOf(b, proposed, followerState[b])]
    \* the maximal ISR changed: the HWM rule again (it only matters with
    \* BugHwmOnPendingIsr, where a pending shrink counts at once)
    /\ SetLeaderHwm(b, LeaderHwm(b, log, metadata[b], proposed, followerState[b], ViewMinIsr(metadata[b]),
                                 hwm[b], committedLog, acked, pendingAcks[b]))

\* KIP-966 §"ISR invariants": the leader keeps "removing a replica out of ISR
\* if it is lagging": f has not caught up with the leader's log end as far as
\* the leader learned from f's fetches.  While the shrink is pending the
\* maximal ISR is still the old ISR.
ShrinkIsr(b, f) ==
    /\ SyncGate
    /\ ActsAsLeader(b)
    /\ pendingIsr[b] = {} /\ alterPartition[b] = NoMessage
    /\ f \in metadata[b].isr \ {b}
    /\ followerState[b][f].leo < Len(log[b])
    /\ SendAlterPartition(b, metadata[b].isr \ {f})
    /\ UNCHANGED <<brokerVars, controllerVars, metadata, followerState, uncleanShutdowns,
                   lostCommitted>>

\* KIP-966 §"Additional High Watermark advancement requirement": the maximal
\* ISR "includes the current ISR members and pending-to-add replicas that have
\* not yet been committed to the controller".  Kafka's in-sync test on what
\* the leader learned: f's fetch offset (fs[f].leo, after the HWM h) reaches
\* the HWM and the leader epoch start offset, and f's broker epoch is known
\* (KIP-903).  Whether f is fenced is the controller's to check (KIP-841) --
\* and, with LeaderCacheIsrEligibility, first the leader's, on its metadata
\* cache (Kafka's Partition.isReplicaIsrEligible): KIP-841 "The leader will
\* consider only active (not fenced nor in controlled shutdown) replicas to be
\* eligible to join the ISR", KIP-903 a replica whose fetch named another
\* broker epoch than the cache's is not eligible either.  f's entry in b's
\* view is f's broker epoch when unfenced, 0 when fenced, so one comparison
\* with the epoch f's fetch named checks both.  The cache "is eventually
\* consistent" (KIP-841): it may still have f unfenced after the fencing (the
\* controller then answers INELIGIBLE_REPLICA), or fenced after the unfencing
\* (b proposes at a fetch after its next catch-up).
IsrExpandGuard(b, f, fs, h) ==
    /\ f /= b /\ f \notin metadata[b].isr
    /\ fs[f].brokerEpoch /= 0
    /\ fs[f].leo >= h
    /\ fs[f].leo >= EpochStartOffset(log[b], metadata[b].leaderEpoch)
    /\ LeaderCacheIsrEligibility => metadata[b].registrations[f] = fs[f].brokerEpoch

\* KIP-841 (cwiki, "Broker Unfencing"): "When a broker is unfenced by the
\* controller, the leader does nothing because subsequent fetch requests from
\* the followers will try to get them back into the ISR if they are
\* caught-up"; Kafka's leader runs Partition.maybeExpandIsr inside
\* updateFollowerFetchState, while it handles f's fetch.  One step: f's fetch
\* round at its leader b (FollowerFetch's writes, possibly none: a caught-up
\* follower's fetch changes nothing else), b's HWM rule, then -- f in sync
\* after the fetch -- b's AlterPartition adding f, and the HWM rule over the
\* new maximal ISR.  Every such step is a FollowerFetch step followed by a
\* ProposeIsrExpand step of FetchTriggeredIsrExpand = FALSE (or the latter
\* alone): a restriction.  The leader's eligibility check on its metadata
\* cache (KIP-841/903) is IsrExpandGuard's with LeaderCacheIsrEligibility;
\* without it the check is left to the controller, and a fetch may still end
\* without a proposal (FollowerFetch: a cache that has f fenced).
FetchAndProposeIsrExpand(b, f) ==
    /\ CanFetch(f, b)
    /\ pendingIsr[b] = {} /\ alterPartition[b] = NoMessage
    /\ LET newLog   == FetchedLog(f, b)
           fs       == FetchedFollowers(f, b)
           hu       == LeaderHwm(b, newLog, metadata[b], {}, fs, ViewMinIsr(metadata[b]), hwm[b],
                                 committedLog, acked, pendingAcks[b])
           proposed == metadata[b].isr \cup {f}
       IN  /\ IsrExpandGuard(b, f, fs, hu.hwm)
           /\ FetchWrites(f, b)
           /\ followerState'  = [followerState EXCEPT ![b] = fs]
           /\ pendingIsr'     = [pendingIsr EXCEPT ![b] = proposed]
           /\ alterPartition' = [alterPartition EXCEPT ![b] = AlterPartitionRequestOf(b, proposed, fs)]
           /\ SetLeaderHwm(b, LeaderHwm(b, newLog, metadata[b], proposed, fs, ViewMinIsr(metadata[b]),
                                        hu.hwm, hu.committedLog, hu.acked, hu.pendingAcks))
    /\ UNCHANGED <<alive, shutdownFile, controllerVars, metadata, uncleanShutdowns>>

\* FetchTriggeredIsrExpand = FALSE: b proposes f whenever the guard holds on
\* what b learned from f's fetches, also long after the last one (e.g. after
\* f was unfenced, or stopped): an over-approximation of Kafka.
\* FetchTriggeredIsrExpand = TRUE: FetchAndProposeIsrExpand above.
ProposeIsrExpand(b, f) ==
    IF FetchTriggeredIsrExpand
    THEN FetchAndProposeIsrExpand(b, f)
    ELSE /\ SyncGate
         /\ ActsAsLeader(b)
         /\ pendingIsr[b] = {} /\ alterPartition[b] = NoMessage
         /\ IsrExpandGuard(b, f, followerState[b], hwm[b])
         /\ SendAlterPartition(b, metadata[b].isr \cup {f})
         /\ UNCHANGED <<brokerVars, controllerVars, metadata, followerState, uncleanShutdowns,
                        lostCommitted>>

\* The controller's validation of an AlterPartition (Kafka's
\* ReplicationControlManager), in its order:
\*  - FENCED_LEADER_EPOCH: the request's leader epoch is not the current one
\*    (or the sender no longer leads, abstraction A5);
\*  - INVALID_UPDATE_VERSION: the request's partition epoch is not the current
\*    one -- the leader proposed from a stale view (skipped with
\*    BugSkipPartitionEpochCheck);
\*  - INELIGIBLE_REPLICA: a proposed member is fenced (KIP-841) or its broker
\*    epoch in the request is not the registered one (KIP-903).
AlterPartitionError(b, req) ==
    CASE req.leaderEpoch /= leaderEpoch \/ leader /= b -> "FENCED_LEADER_EPOCH"
      [] req.partitionEpoch /= partitionEpoch /\ ~BugSkipPartitionEpochCheck
            -> "INVALID_UPDATE_VERSION"
      [] \E m \in req.isr : \/ fenced[m]
                            \/ req.brokerEpochs[m] /= 0 /\ req.brokerEpochs[m] /= brokerEpoch[m]
            -> "INELIGIBLE_REPLICA"
      [] OTHER -> "NONE"

\* KIP-966 §"Controller behaviors" 1: "AlterPartition request ... When the
\* controller receives the new ISR, it will trigger an ELR update."  A valid
\* request is committed (ELR update rules, partition epoch + 1) and answered
\* with the new partition state; an invalid one is answered with its error.
\* A request from a broker that has stopped is still processed; the response
\* is lost (also when b has restarted since: the new incarnation's connection
\* never carried the request).
HandleAlterPartition(b) ==
    /\ alterPartition[b] /= NoMessage
    /\ alterPartition[b].type = "Request"
    /\ LET req      == alterPartition[b]
           err      == AlterPartitionError(b, req)
           \* the response travels back on the sender's connection: it is lost if
           \* that incarnation stopped, also when a new incarnation of b (a new
           \* broker epoch, RestartBroker) runs by now -- it never sent this request
           reply(p) == IF alive[b] /\ req.brokerEpochs[b] = brokerEpoch[b]
                       THEN [type |-> "Response", error |-> err, partition |-> p]
                       ELSE NoMessage
       IN  IF err = "NONE"
           THEN LET st == ElrUpdate(isr, elr, lastKnownElr, req.isr, EffMinIsr, {},
                                    ElrEnabled, BugSkipElrRule, BugLastKnownElrLiteral)
                IN  \E o \in ElectionOutcomes(st, Unfenced, leader) :
                       /\ ApplyOutcome(o, log)
                       /\ alterPartition' = [alterPartition EXCEPT ![b] = reply(ViewAfter)]
           ELSE /\ UNCHANGED <<partitionVars, committedLog>>
                /\ alterPartition' = [alterPartition EXCEPT ![b] = reply(EmptyView)]
    /\ UNCHANGED <<brokerVars, brokerEpoch, fenced, minIsr, replies, metadata, hwm, pendingIsr,
                   pendingAcks, followerState, otherGhostVars>>

\* The leader applies the response: NONE with a partition epoch newer than its
\* view commits the proposal in its view; otherwise (an error, or metadata
\* that already brought a newer state) the pending ISR is dropped and the
\* leader waits for the metadata, proposing again from its view later
\* (Kafka: FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION and INELIGIBLE_REPLICA
\* are not retried as such).  With LeaderCacheIsrEligibility the committed
\* view carries the broker registrations as of the commit (ViewAfter in
\* HandleAlterPartition; abstraction A10): Kafka's response carries the
\* partition only and its MetadataCache catches up with the log later.
HandleAlterPartitionResponse(b) ==
    /\ alive[b]
    /\ alterPartition[b] /= NoMessage
    /\ alterPartition[b].type = "Response"
    /\ LET resp == alterPartition[b]
           ok   == /\ resp.error = "NONE" /\ pendingIsr[b] /= {}
                   /\ resp.partition.partitionEpoch > metadata[b].partitionEpoch
       IN  InstallView(b, IF ok THEN resp.partition ELSE metadata[b], log)
    /\ alterPartition' = [alterPartition EXCEPT ![b] = NoMessage]
    /\ UNCHANGED <<brokerVars, controllerVars, uncleanShutdowns, lostCommitted>>

-----------------------------------------------------------------------------
(***************************************************************************)
(* Broker lifecycle                                                        *)
(***************************************************************************)

\* KIP-966 §"Controller behaviors" 2: "The replica gets fenced. When it
\* happens, the controller will trigger the ELR update with the new updated
\* ISR."  b is dead (its session timed out) or, when FenceRunningBrokers, still
\* running but cut off from the controller (it keeps acting on its view).  If
\* b led, the controller elects a new leader (election order).
FenceBroker(b) ==
    /\ SyncGate
    /\ ~fenced[b]
    /\ alive[b] => FenceRunningBrokers
    /\ fenced' = [fenced EXCEPT ![b] = TRUE]
    /\ \E o \in FenceOutcomes(b) : ApplyOutcome(o, log)
    /\ UNCHANGED <<brokerVars, brokerEpoch, minIsr, replies, replicaVars, otherGhostVars>>

\* KIP-966 §"Controller behaviors" 3: "The replica gets unfenced. If the
\* replica is an ELR member and ISR is empty, this replica will be elected as
\* leader, added to ISR, and removed from ELR."  More generally a leaderless
\* partition runs the election (pre-KIP: the last ISR member returns;
\* §"Delivery plan": the LastKnownLeader once it is unfenced).  Here a running
\* broker fenced by a network partition resumes heartbeating, having caught
\* up with the metadata (A8); a restarted broker is unfenced in RestartBroker.
UnfenceBroker(b) ==
    /\ SyncGate
    /\ fenced[b] /\ alive[b]
    /\ fenced' = [fenced EXCEPT ![b] = FALSE]
    /\ \E o \in ElectionOutcomes(StateOf, Unfenced \cup {b}, leader) :
          /\ ApplyPartition(o)
          /\ InstallViewFrom(b, ViewAfterWith([Registrations EXCEPT ![b] = brokerEpoch[b]]), log,
                             CommittedAfter(o, log))
    /\ UNCHANGED <<brokerVars, brokerEpoch, minIsr, replies, alterPartition,
                   uncleanShutdowns, lostCommitted>>

\* KIP-966 §"Detection of an unclean shutdown" 1: "During the shutdown, write
\* the current broker epoch in the CleanShutdownFile" (after the log is
\* flushed).  A controlled shutdown: the controller fences b first, moving
\* leadership and the ISR as in FenceBroker; then b stops.
CleanShutdown(b) ==
    /\ SyncGate
    /\ alive[b]
    /\ alive'        = [alive EXCEPT ![b] = FALSE]
    /\ flushed'      = [flushed EXCEPT ![b] = Len(log[b])]
    /\ shutdownFile' = [shutdownFile EXCEPT ![b] = brokerEpoch[b]]
    /\ fenced'       = [fenced EXCEPT ![b] = TRUE]
    /\ IF fenced[b]
       THEN UNCHANGED <<partitionVars, committedLog>>
       ELSE \E o \in FenceOutcomes(b) : ApplyOutcome(o, log)
    /\ BrokerStops(b)
    /\ UNCHANGED <<log, brokerEpoch, minIsr, replies, otherGhostVars>>

\* KIP-966 §"Motivation": an unclean shutdown "where unflushed data in the OS
\* page cache is lost".  No CleanShutdownFile is written; the controller does
\* not notice until the session times out (FenceBroker) or b registers again.
\* b's purgatory dies with it.  What survives of the unflushed suffix is
\* decided at restart (abstraction A4).
UncleanShutdown(b) ==
    /\ SyncGate
    /\ alive[b]
    /\ uncleanShutdowns < MaxUncleanShutdowns
    /\ alive'            = [alive EXCEPT ![b] = FALSE]
    /\ uncleanShutdowns' = uncleanShutdowns + 1
    /\ BrokerStops(b)
    /\ UNCHANGED <<log, flushed, shutdownFile, controllerVars, acked, committedLog,
                   lostCommitted>>

\* KIP-966 §"Detection of an unclean shutdown" 2-4, §"Controller behaviors" 4
\* and 3: the broker recovers its log (keeping k records, at least the flushed
\* ones), reads the previous broker epoch from the CleanShutdownFile (-1 if
\* absent) and registers.  The controller compares it with its registration
\* record: a mismatch or -1 is an unclean shutdown, and "the controller will
\* remove the broker from ISR and ELR before persisting the registration
\* record" (it joins the LastKnownELR, §"Other behaviors" 6a).  Registering
\* fences the old incarnation (if the controller had not yet noticed the
\* crash) and the new one gets a new broker epoch.  The CleanShutdownFile is
\* removed once the log manager is up.
\* The new incarnation catches up with the metadata and is then unfenced ("3.
\* The replica gets unfenced"), and a leaderless partition runs its election
\* (abstraction A8).
\* Pre-KIP (ElrEnabled = FALSE) there is no detection: registering only fences
\* the old incarnation, which keeps the last ISR member in the ISR.
RestartBroker(b, k) ==
    /\ SyncGate
    /\ ~alive[b]
    /\ brokerEpoch[b] < MaxBrokerEpoch
    /\ Restarts < MaxRestarts
    /\ k \in flushed[b]..Len(log[b])
    /\ LET cleanShutdown   == shutdownFile[b] = brokerEpoch[b]
           uncleanDetected == ElrEnabled /\ ~cleanShutdown
           unclean         == IF uncleanDetected /\ ~BugKeepUncleanInElr THEN {b} ELSE {}
           newLog          == [log EXCEPT ![b] = SubSeq(@, 1, k)]
           incumbent       == IF leader = b THEN NoBroker ELSE leader
       IN  /\ log' = newLog
           \* KafkaRegistersFenced: the new registration is fenced (Kafka's
           \* RegisterBrokerRecord); the broker is unfenced by UnfenceBroker, its first
           \* heartbeat after catching up (Kafka's BrokerHeartbeatManager)
           /\ \E o \in ElectionOutcomes(RemovalState(b, unclean),
                                        IF KafkaRegistersFenced THEN Unfenced \ {b}
                                        ELSE Unfenced \cup {b},
                                        incumbent) :
                 /\ ApplyPartition(o)
                 /\ InstallViewFrom(b, ViewAfterWith([Registrations EXCEPT ![b] =
                                        IF KafkaRegistersFenced THEN 0 ELSE brokerEpoch[b] + 1]),
                                    newLog, CommittedAfter(o, newLog))
    /\ alive'             = [alive EXCEPT ![b] = TRUE]
    /\ flushed'           = [flushed EXCEPT ![b] = k]
    /\ shutdownFile'      = [shutdownFile EXCEPT ![b] = -1]
    /\ brokerEpoch'       = [brokerEpoch EXCEPT ![b] = @ + 1]
    /\ fenced'            = [fenced EXCEPT ![b] = KafkaRegistersFenced]
    /\ LET lost == {<<i, log[b][i]>> : i \in k + 1 .. CountedPrefix(b)}
       IN  lostCommitted' = [lostCommitted EXCEPT ![b] = @ \cup lost]
    /\ UNCHANGED <<minIsr, replies, alterPartition, uncleanShutdowns>>

-----------------------------------------------------------------------------
(***************************************************************************)
(* Configuration change                                                    *)
(***************************************************************************)

\* KIP-966 §"Other behaviors" 2: "When updating the config
\* min.insync.replicas, if the new min ISR <= current ISR, the ELR will be
\* removed."  (Rule 1 of the ELR update with the unchanged ISR as proposal;
\* below the new min ISR the ELR is kept as it is.)  The effective min ISR is
\* min(min ISR, replication factor) (§"Compatibility").  Brokers see the new
\* config with the metadata (abstraction A11); a leader applies it at its next HWM
\* computation (its next fetch round).
\* KafkaMinIsrClearsElr (Kafka's ConfigurationControlManager.createClearElrRecordsAsNeeded
\* and ReplicationControlManager.removeTopicElrs): every change of the topic's
\* min.insync.replicas writes a ClearElrRecord, which empties ELR and LastKnownElr (so
\* also the last known leader Kafka keeps there) whatever the ISR, bumps the partition
\* epoch if they were not empty, and elects no one.
ChangeMinIsr(m) ==
    /\ SyncGate
    /\ m /= minIsr
    /\ minIsr' = m
    /\ IF KafkaMinIsrClearsElr /\ ElrEnabled
       THEN LET cleared == elr /= {} \/ lastKnownElr /= {} \/ lastKnownLeader /= NoBroker
            IN  /\ cleared => partitionEpoch < MaxPartitionEpoch
                /\ elr' = {} /\ lastKnownElr' = {} /\ lastKnownLeader' = NoBroker
                /\ partitionEpoch' = IF cleared THEN partitionEpoch + 1 ELSE partitionEpoch
                /\ UNCHANGED <<leader, leaderEpoch, isr, committedLog>>
       ELSE LET newEff == EffectiveMinIsr(m, ReplicationFactor)
                st     == ElrUpdate(isr, elr, lastKnownElr, isr, newEff, {},
                                    ElrEnabled, BugSkipElrRule, BugLastKnownElrLiteral)
            IN  \E o \in ElectionOutcomes(st, Unfenced, leader) : ApplyOutcome(o, log)
    /\ UNCHANGED <<brokerVars, brokerEpoch, fenced, replies, replicaVars, otherGhostVars>>

-----------------------------------------------------------------------------
(***************************************************************************)
(* Unclean recovery and unclean election (election order steps 3 and 4)    *)
(***************************************************************************)
NoCleanCandidate ==
    /\ leader = NoBroker
    /\ CleanCandidates(isr, elr, Unfenced, ElrEnabled) = {}
    /\ LastKnownLeaderCandidates(isr, elr, lastKnownLeader, Unfenced, RecoveryStrategy,
                                 UncleanRecoveryEnabled, ElrEnabled) = {}

Decision == RecoveryDecision(RecoveryStrategy, UncleanRecoveryEnabled, ElrEnabled,
                             isr, elr, lastKnownElr, Unfenced, BugBalancedFixedReplies)

InUncleanRecovery == NoCleanCandidate /\ Decision = "UncleanRecovery"

\* KIP-966 §"Unclean recovery": "the controller will use a new API
\* GetReplicaLogInfo to query the log end offset and the leader epoch from
\* each replica"; §"GetReplicaLogInfo Response".  The controller keeps the
\* latest reply of each broker; a broker answers again when its answer changed
\* (its log, or the leader epoch in its metadata cache).
SendReplicaLogInfo(b) ==
    /\ SyncGate
    /\ InUncleanRecovery
    /\ alive[b] /\ ~fenced[b]
    /\ replies[b] /= LogInfo(b)
    /\ replies' = [replies EXCEPT ![b] = LogInfo(b)]
    /\ UNCHANGED <<brokerVars, brokerEpoch, fenced, partitionVars, minIsr, replicaVars,
                   ghostVars>>

\* The replies the controller may use: from unfenced brokers, not fenced by
\* broker epoch ("the controller can reject the response because the broker
\* epoch in the request mismatches with the broker registration") nor by
\* partition leader epoch ("to fence stale GetReplicaLogInfo responses").
UsableRepliers ==
    {b \in Unfenced : /\ replies[b] /= NoReply
                      /\ \/ BugAcceptStaleReplies
                         \/ ReplyIsFresh(replies[b], brokerEpoch[b], leaderEpoch)}

\* KIP-966 §"Unclean recovery": "The one with the highest leader epoch plus the
\* longest log end offset will be the new leader"; "The controller can start an
\* election when: In Balance mode, all the LastKnownELR members have replied
\* ...; In Aggressive mode, any replicas replied".  The election is unclean:
\* ISR = {leader}, ELR fields cleaned, LastKnownLeader cleaned.
CompleteUncleanRecovery ==
    /\ SyncGate
    /\ InUncleanRecovery
    /\ RecoveryCanElect(RecoveryStrategy, lastKnownElr, UsableRepliers,
                        BugBalancedFixedReplies, EffMinIsr)
    /\ \E c \in BestRepliers(UsableRepliers, replies, BugLongestLogIgnoresEpoch) :
          ApplyOutcome(ElectOutcome(StateOf, c), log)
    /\ UNCHANGED <<brokerVars, brokerEpoch, fenced, minIsr, replies, replicaVars, otherGhostVars>>

\* KIP-966 §"Delivery plan": without the unclean recovery manager (or pre-KIP),
\* unclean.leader.election.enable=true "will be randomly choosing an unfenced
\* replica as it is today" when no ISR / unfenced ELR member exists.
UncleanLeaderElection ==
    /\ SyncGate
    /\ NoCleanCandidate
    /\ Decision = "UncleanElection"
    /\ \E c \in Unfenced : ApplyOutcome(ElectOutcome(StateOf, c), log)
    /\ UNCHANGED <<brokerVars, brokerEpoch, fenced, minIsr, replies, replicaVars, otherGhostVars>>

-----------------------------------------------------------------------------
(***************************************************************************)
(* Next-state relation.  Each disjunct is a named operator so that TLC     *)
(* labels every transition with its action name (the quantifiers range     *)
(* over CONSTANT sets only).                                               *)
(***************************************************************************)
ProduceStep            == \E b \in Brokers, v \in Values : Produce(b, v)  \* KIP-966 §"Additional High Watermark advancement requirement"
FollowerFetchStep      == \E f \in Brokers : FollowerFetch(f)  \* KIP-966 §"Broker behaviors"
ReceiveMetadataStep    == \E b \in Brokers : ReceiveMetadata(b)  \* KIP-966 §"Other behaviors" (metadata propagation)
ShrinkIsrStep          == \E b, f \in Brokers : ShrinkIsr(b, f)  \* KIP-966 §"ISR invariants"
ProposeIsrExpandStep   == \E b, f \in Brokers : ProposeIsrExpand(b, f)  \* KIP-966 §"Additional High Watermark advancement requirement"
HandleAlterPartitionStep == \E b \in Brokers : HandleAlterPartition(b)  \* KIP-966 §"Controller behaviors" 1
HandleAlterPartitionResponseStep == \E b \in Brokers : HandleAlterPartitionResponse(b)  \* KIP-966 §"Controller behaviors" 1
FenceBrokerStep        == \E b \in Brokers : FenceBroker(b)  \* KIP-966 §"Controller behaviors"
UnfenceBrokerStep      == \E b \in Brokers : UnfenceBroker(b)  \* KIP-966 §"Controller behaviors"
CleanShutdownStep      == \E b \in Brokers : CleanShutdown(b)  \* KIP-966 §"Detection of an unclean shutdown"
UncleanShutdownStep    == \E b \in Brokers : UncleanShutdown(b)  \* KIP-966 §"Motivation"
RestartBrokerStep      == \E b \in Brokers, k \in 0..MaxLogLen : RestartBroker(b, k)  \* KIP-966 §"Detection of an unclean shutdown"
ChangeMinIsrStep       == \E m \in MinIsrValues : ChangeMinIsr(m)  \* KIP-966 §"Other behaviors"
SendReplicaLogInfoStep == \E b \in Brokers : SendReplicaLogInfo(b)  \* KIP-966 §"Unclean recovery"

Next ==
    \/ ProduceStep
    \/ FollowerFetchStep
    \/ ReceiveMetadataStep
    \/ ShrinkIsrStep
    \/ ProposeIsrExpandStep
    \/ HandleAlterPartitionStep
    \/ HandleAlterPartitionResponseStep
    \/ FenceBrokerStep
    \/ UnfenceBrokerStep
    \/ CleanShutdownStep
    \/ UncleanShutdownStep
    \/ RestartBrokerStep
    \/ ChangeMinIsrStep
    \/ SendReplicaLogInfoStep
    \/ CompleteUncleanRecovery
    \/ UncleanLeaderElection

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(***************************************************************************)
(* INVARIANTS                                                              *)
(***************************************************************************)
TypeOK ==
    /\ alive           \in [Brokers -> BOOLEAN]
    /\ log             \in [Brokers -> Seq(Record)]
    /\ \A b \in Brokers : Len(log[b]) <= MaxLogLen
    /\ flushed         \in [Brokers -> 0..MaxLogLen]
    /\ \A b \in Brokers : flushed[b] <= Len(log[b])
    /\ shutdownFile    \in [Brokers -> {-1} \cup 1..MaxBrokerEpoch]
    /\ brokerEpoch     \in [Brokers -> 1..MaxBrokerEpoch]
    /\ fenced          \in [Brokers -> BOOLEAN]
    /\ leader          \in Brokers \cup {NoBroker}
    /\ leaderEpoch     \in 1..MaxLeaderEpoch
    /\ partitionEpoch  \in 0..MaxPartitionEpoch
    /\ isr             \subseteq Brokers
    /\ elr             \subseteq Brokers
    /\ lastKnownElr    \subseteq Brokers
    /\ lastKnownLeader \in Brokers \cup {NoBroker}
    /\ minIsr          \in MinIsrValues
    /\ replies         \in [Brokers -> Reply \cup {NoReply}]
    /\ metadata        \in [Brokers -> View]
    /\ hwm             \in [Brokers -> 0..MaxLogLen]
    /\ pendingIsr      \in [Brokers -> SUBSET Brokers]
    /\ pendingAcks     \in [Brokers -> SUBSET (1..MaxLogLen)]
    /\ followerState   \in [Brokers -> [Brokers -> FollowerInfo]]
    /\ alterPartition  \in [Brokers -> {NoMessage} \cup AlterPartitionRequest
                                                   \cup AlterPartitionResponse]
    /\ acked           \subseteq (1..MaxLogLen) \X Record
    /\ committedLog    \in Seq(Record) /\ Len(committedLog) <= MaxLogLen
    /\ uncleanShutdowns  \in 0..MaxUncleanShutdowns
    /\ lostCommitted     \in [Brokers -> SUBSET ((1..MaxLogLen) \X Record)]

\* KIP-966 §"ELR invariants": "The member of ELR should not be in ISR."
ElrIsrDisjoint == elr \cap isr = {}

\* KIP-966 §"ELR invariants": "The member of ELR should have the data at least
\* to HWM."  (A member that crashed keeps, in this model, the log the cluster
\* last saw until it restarts, and it leaves the ELR at an unclean restart.)
ElrMembersHaveDataToHwm == \A b \in elr : IsPrefix(committedLog, log[b])

\* KIP-966 §"ELR invariants": "If ELR is not empty, the ISR is under min ISR."
NonEmptyElrImpliesIsrBelowMinIsr == elr /= {} => Cardinality(isr) < EffMinIsr

\* KIP-966 §"Motivation"/§"Eligible Leader Replicas": no record acknowledged
\* to an acks=all producer is lost while at most MinISR-1 data loss unclean
\* shutdowns happened: the running leader's log holds every acked record.
NoAckedRecordLost ==
    (WithinTolerance /\ LeaderLive) =>
        \A e \in acked : e[1] <= Len(log[leader]) /\ log[leader][e[1]] = e[2]

\* The leader is an ISR member and is not fenced (controller state).
LeaderInIsr == leader /= NoBroker => leader \in isr
LeaderUnfenced == leader /= NoBroker => ~fenced[leader]

\* KIP-966 §"ISR invariants": a fenced replica is removed from the ISR (with
\* ELR enabled the ISR may become empty instead of keeping the last member).
FencedNotInIsr == ElrEnabled => \A b \in isr : ~fenced[b]

\* Pre-KIP-966 the ISR never becomes empty.
IsrNonEmptyWithoutElr == ~ElrEnabled => isr /= {}

\* The LastKnownELR only holds replicas that left ISR/ELR (§"Other behaviors" 6).
LastKnownElrDisjoint == lastKnownElr \cap (isr \cup elr) = {}

\* A pending ISR is proposed by a broker that includes itself.
PendingIsrHasLeader == \A b \in Brokers : pendingIsr[b] /= {} => b \in pendingIsr[b]

\* The HWM never passes the log end of a broker serving it.
HwmWithinLeaderLog == \A b \in Brokers : ActsAsLeader(b) => hwm[b] <= Len(log[b])

\* Records are identified by (offset, leader epoch): two replicas holding the
\* same record at an offset hold the same log up to it (Kafka's log matching).
LogMatching ==
    \A b1, b2 \in Brokers :
        \A i \in 1..MaxLogLen :
            (i <= Len(log[b1]) /\ i <= Len(log[b2]) /\ log[b1][i] = log[b2][i])
                => SubSeq(log[b1], 1, i) = SubSeq(log[b2], 1, i)

\* KIP-966 §"Eligible Leader Replicas": "only the member in the last ISR
\* snapshot when the ISR drops below min ISR can join the ELR which indicates
\* the ELR member has the logs at least to the HWM", and the ISR members have
\* it by the HWM rule: every ISR and ELR member holds the committed log, so
\* any clean candidate keeps it.  (Pre-KIP the last ISR member stays in the ISR
\* after losing data: the KIP's motivation, elr-bug-elr-disabled.)
IsrAndElrHoldCommittedLog ==
    ElrEnabled => \A b \in isr \cup elr : IsPrefix(committedLog, log[b])

\* KIP-966 §"Motivation": "MinISR-1 tolerance to data loss unclean shutdown
\* events", stated without reference to a live leader: within the tolerance
\* (1) every record acknowledged to an acks=all producer is still in the
\* consumer-visible committed log, and (2) some replica -- running or not --
\* still holds the whole committed log.
NoCommittedRecordLost ==
    WithinTolerance =>
        /\ \A e \in acked : HoldsRecord(committedLog, e)
        /\ \E b \in Brokers : IsPrefix(committedLog, log[b])

\* The same, for the replicas the controller would wait for: within the
\* tolerance some member of ISR, ELR or LastKnownELR holds the committed log,
\* so a Balanced recovery (which waits for every LastKnownELR member, §"Unclean
\* recovery" 4b) can always elect a replica with every committed record.  This
\* is what the literal reading of §"Other behaviors" 6a breaks
\* (elr-finding-last-known-elr-literal).
CommittedLogOnElectableReplica ==
    (ElrEnabled /\ WithinTolerance /\ committedLog /= <<>>) =>
        \E b \in isr \cup elr \cup lastKnownElr : IsPrefix(committedLog, log[b])

(***************************************************************************)
(* Invariants of the asynchronous model (in the style of Vanlightly's      *)
(* KIP-966 specification), each named for what it protects.                *)
(***************************************************************************)

\* The replication quorum the current leader waits for before advancing the
\* HWM (its maximal ISR) contains every member of the ISR the controller
\* committed: whatever the controller may elect next from the ISR has every
\* record below the leader's HWM.  Stale views are allowed -- a leader may
\* wait for MORE replicas than the controller's ISR, never fewer.  This is
\* what the partition epoch check protects (elr-bug-skip-partition-epoch-check)
\* and what counting a pending shrink breaks (elr-bug-hwm-on-pending-isr).
ReplicationQuorumSuperset ==
    CurrentLeaderActing => isr \subseteq HwmQuorum(metadata[leader], pendingIsr[leader])

\* Every replica the controller could elect cleanly now (an ISR member, or an
\* ELR member when the ISR is empty, fenced or not) holds the whole committed
\* log: a clean election never loses a committed record.
LeaderCandidateCompleteness ==
    ElrEnabled =>
        \A b \in CleanCandidates(isr, elr, Brokers, ElrEnabled) : IsPrefix(committedLog, log[b])

\* Consumers of different leaders -- a replaced leader still serving its
\* view and the new one -- never read diverging records: within the
\* tolerance, what any broker acting as leader exposes below its HWM is a
\* prefix of the committed log or extends it.
ConsistentReads ==
    WithinTolerance =>
        \A b \in Brokers :
            ActsAsLeader(b) =>
                LET visible == SubSeq(log[b], 1, hwm[b])
                IN  IsPrefix(visible, committedLog) \/ IsPrefix(committedLog, visible)

\* Within the tolerance, every committed record (offset by offset) is still
\* held by some replica, running or not.
NoCommittedRecordLostGlobally ==
    WithinTolerance =>
        \A i \in 1..Len(committedLog) :
            \E b \in Brokers : HoldsRecord(log[b], <<i, committedLog[i]>>)

\* Within the tolerance, every record acknowledged to an acks=all producer --
\* by any leader, a replaced one too -- is committed and held by some replica.
AckedRecordNeverLost ==
    WithinTolerance =>
        \A e \in acked : HoldsRecord(committedLog, e) /\ \E b \in Brokers : HoldsRecord(log[b], e)

-----------------------------------------------------------------------------
(***************************************************************************)
(* ACTION PROPERTIES (check with PROPERTY)                                 *)
(***************************************************************************)

\* KIP-966 §"ELR invariants": "ELR + ISR size will not be dropped below the
\* min ISR unless the controller discovers an ELR member has an unclean
\* shutdown."  A step may leave ISR+ELR below min ISR only by removing brokers
\* that just registered after an unclean shutdown, or by an unclean election
\* (which resets ISR and ELR).
UncleanlyRegistered ==
    {b \in Brokers : brokerEpoch'[b] /= brokerEpoch[b] /\ shutdownFile[b] /= brokerEpoch[b]}

IsrElrDropAllowed ==
    LET before == isr \cup elr
        after  == isr' \cup elr'
    IN  \/ Cardinality(after) >= EffectiveMinIsr(minIsr', ReplicationFactor)
        \/ before \ after \subseteq UncleanlyRegistered
        \/ leader' /= NoBroker /\ leader' \notin before      \* unclean election

IsrPlusElrAtLeastMinIsr == [][IsrElrDropAllowed]_vars

\* KIP-966 §"Eligible Leader Replicas": "elect a leader without data loss or
\* HWM moving backward when we only have min ISR - 1 unclean shutdowns".  The
\* consumer-visible HWM (the committed log's length) never decreases.
HighWatermarkMonotonic == [][WithinTolerance' => Len(committedLog') >= Len(committedLog)]_vars

\* The same, by content: within the tolerance the committed log only grows by
\* extension (a length check alone would let an acks=1 record below the HWM
\* be replaced by another record at the same offset).
CommittedLogOnlyExtends == [][WithinTolerance' => IsPrefix(committedLog, committedLog')]_vars

\* KIP-966 §"Additional High Watermark advancement requirement": "High
\* Watermark can only advance if the ISR size is larger or equal to
\* min.insync.replicas", the ISR being "the latest ISR membership persisted by
\* the controller, not the maximal ISR" -- as far as the leader has learned
\* it.  Checked on every step of every broker leading in the same epoch.
HwmAdvancesOnlyWithMinIsr ==
    [][\A b \in Brokers :
          (/\ alive[b] /\ metadata[b].leader = b /\ metadata'[b].leader = b
           /\ metadata'[b].leaderEpoch = metadata[b].leaderEpoch /\ hwm'[b] > hwm[b])
             => Cardinality(metadata'[b].isr) >= ViewMinIsr(metadata'[b])]_vars

-----------------------------------------------------------------------------
(***************************************************************************)
(* LIVENESS                                                                *)
(*                                                                         *)
(* Fairness: the protocol's own steps are weakly fair -- followers fetch,  *)
(* brokers receive metadata, the leader proposes ISR expansions, the       *)
(* controller answers AlterPartition and the leader handles the answer,    *)
(* the controller fences a dead broker once its session times out, a       *)
(* running fenced broker heartbeats again (a network partition heals),     *)
(* replicas answer GetReplicaLogInfo and the controller completes the      *)
(* unclean recovery / unclean election.  The environment's steps are not   *)
(* fair: produce requests, shutdowns, restarts, ISR shrinks (a timing      *)
(* choice), fencing a running broker, min ISR changes.                     *)
(***************************************************************************)
Fairness ==
    /\ \A f \in Brokers : WF_vars(FollowerFetch(f))
    /\ \A b \in Brokers : WF_vars(ReceiveMetadata(b))
    /\ \A b \in Brokers : \A f \in Brokers \ {b} : WF_vars(ProposeIsrExpand(b, f))  \* f /= b
    /\ \A b \in Brokers : WF_vars(HandleAlterPartition(b))
    /\ \A b \in Brokers : WF_vars(HandleAlterPartitionResponse(b))
    /\ \A b \in Brokers : WF_vars(~alive[b] /\ FenceBroker(b))
    /\ \A b \in Brokers : WF_vars(UnfenceBroker(b))
    /\ \A b \in Brokers : WF_vars(SendReplicaLogInfo(b))
    /\ WF_vars(CompleteUncleanRecovery)
    /\ WF_vars(UncleanLeaderElection)

LiveSpec == Spec /\ Fairness

\* KIP-966 §"Controller behaviors" 3 / election order 2: an unfenced ELR
\* member with an empty ISR is elected (while an election fits the
\* MaxLeaderEpoch bound).  In this spec the election runs in the same step
\* that empties the ISR or unfences the member, so the premise never holds in
\* a reachable state; the property pins that down.
ElrMemberEventuallyElected ==
    (isr = {} /\ elr \cap Unfenced /= {} /\ leaderEpoch < MaxLeaderEpoch)
        ~> leader /= NoBroker

\* KIP-966 §"Unclean recovery": "In Balance mode, all the LastKnownELR members
\* have replied ..." -- then the controller elects.  Formally: a leaderless
\* Balanced recovery holding a usable reply from every LastKnownELR member
\* (and at least one reply) does not stay so forever; it ends with an
\* election, unless a reply stops counting first (its broker is fenced or
\* re-registers, which the environment may do at any time).
BalancedRecoveryReady ==
    /\ RecoveryStrategy = "Balanced"
    /\ InUncleanRecovery
    /\ UsableRepliers /= {}
    /\ lastKnownElr \subseteq UsableRepliers
    /\ leaderEpoch < MaxLeaderEpoch
    /\ partitionEpoch < MaxPartitionEpoch

BalancedRecoveryEventuallyElects ==
    BalancedRecoveryReady ~> (leader /= NoBroker \/ ~BalancedRecoveryReady)

\* KIP-966 §"Additional High Watermark advancement requirement": while the
\* committed ISR meets min ISR and the running leader has records above its
\* HWM, the HWM advances (the leader learns the metadata, the followers fetch,
\* a dead ISR member is fenced and leaves the ISR) -- unless the ISR falls
\* below min ISR, the leader stops or the partition epoch bound is reached.
HwmCanAdvance ==
    /\ LeaderLive
    /\ Cardinality(isr) >= EffMinIsr
    /\ hwm[leader] < Len(log[leader])
    /\ partitionEpoch < MaxPartitionEpoch

HwmEventuallyAdvances ==
    \A h \in 0..MaxLogLen :
        (HwmCanAdvance /\ hwm[leader] = h) ~> (~HwmCanAdvance \/ hwm[leader] /= h)

\* KIP-966 §"ISR invariants" / Kafka's ISR expansion: a running, unfenced
\* replica outside the ISR, under a running leader, eventually rejoins the
\* ISR (it learns the leader, fetches, the leader proposes it, the controller
\* commits) -- unless it stops, is fenced, the leader stops, or the partition
\* epoch bound is reached.
IsrEventuallyReexpands ==
    \A f \in Brokers :
        (LeaderLive /\ alive[f] /\ ~fenced[f] /\ f \notin isr /\ partitionEpoch < MaxPartitionEpoch)
            ~> (f \in isr \/ ~LeaderLive \/ ~alive[f] \/ fenced[f]
                \/ partitionEpoch = MaxPartitionEpoch)

=============================================================================
