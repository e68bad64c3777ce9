-------------------------------- MODULE ELR --------------------------------
(***************************************************************************)
(* KIP-966: Eligible Leader Replicas (ELR) and Unclean Recovery.           *)
(*                                                                         *)
(* One partition, replicated on every broker of `Brokers` (the replication *)
(* factor is Cardinality(Brokers)), under a single KRaft controller.       *)
(*                                                                         *)
(* What is modelled                                                        *)
(*  - brokers: registration with broker epochs and the previous broker     *)
(*    epoch from the CleanShutdownFile, fencing / unfencing, clean         *)
(*    (controlled) shutdown, unclean shutdown that loses the unflushed     *)
(*    suffix of the log;                                                   *)
(*  - the partition leader: produce with acks=all and acks=1, followers    *)
(*    fetching, the high watermark (HWM), AlterPartition ISR shrink and    *)
(*    expand with the committed ISR vs the leader's maximal ISR;           *)
(*  - the controller: ELR update rules 1, 2a, 2b, 2c, unclean-registration *)
(*    cleanup, LastKnownELR, LastKnownLeader, empty ISR, leader election   *)
(*    order, unclean recovery with GetReplicaLogInfo for the strategies    *)
(*    Aggressive / Balanced / None, and min.insync.replicas changes;       *)
(*  - ElrEnabled = FALSE gives the pre-KIP-966 behaviour.                  *)
(*                                                                         *)
(* The decision rules themselves are pure operators in ELRRules.tla.       *)
(* Model-checking values, symmetry and constraints live in MCELR.tla and   *)
(* tlc_configs/elr-*.cfg, never here.                                      *)
(*                                                                         *)
(* Abstractions (see docs/spec-elr.md for the argument behind each):       *)
(*  A1 Metadata propagation is instantaneous: every broker sees the        *)
(*     controller's partition state (leader, leader epoch, ISR) at once,   *)
(*     so there are no zombie leaders.                                     *)
(*  A2 Kafka's partition epoch is not a variable: an in-flight             *)
(*     AlterPartition is dropped (= rejected) whenever the controller      *)
(*     changes the partition or fences / re-registers a proposed member    *)
(*     (KIP-841 / KIP-903 checks).                                         *)
(*  A3 A follower fetch copies the leader's whole log after truncating     *)
(*     the divergent suffix (longest common prefix).                       *)
(*  A4 The OS page cache is not a variable: an unclean shutdown leaves the *)
(*     log as the rest of the cluster last saw it, and the restart (log    *)
(*     recovery) keeps some prefix of length k, flushed <= k <= LEO.  So   *)
(*     "how much of the unflushed suffix survived" is chosen when the      *)
(*     broker restarts.                                                    *)
(*  A5 The leader epoch is bumped only when a leader is elected (Kafka     *)
(*     also bumps it when the leader becomes "none"; no behaviour here     *)
(*     depends on that).                                                   *)
(*  A6 One controller, no controller failover; no reassignment.            *)
(*  A7 Producers use acks=all whenever the leader accepts it (ISR >= min   *)
(*     ISR) and acks=1 otherwise.                                          *)
(*  A8 A restarting broker registers and is unfenced in one step (it has   *)
(*     caught up with the metadata at once, by A1).                        *)
(*  A9 The leader applies the HWM rule inside the steps where Kafka's      *)
(*     leader recomputes it (append, follower fetch, ISR change, becoming  *)
(*     leader) instead of in a separate step; it knows each follower's     *)
(*     log (a dead follower's as it was when it died).                     *)
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

    \* --- topic / cluster configuration (KIP-966 §"Config changes")
    InitMinIsr,              \* initial min.insync.replicas
    MinIsrValues,            \* values min.insync.replicas may be changed to (contains InitMinIsr)
    ElrEnabled,              \* eligible.leader.replicas.enabled; FALSE = pre-KIP-966
    UncleanRecoveryEnabled,  \* unclean.recovery.manager.enabled; FALSE = §"Delivery plan" phase 1
    RecoveryStrategy,        \* unclean.recovery.strategy: "Aggressive" | "Balanced" | "None"
    FenceRunningBrokers,     \* the controller may fence a broker that is still running
                             \* (network partition between it and the controller)

    \* --- environment bounds: each one guards the actions named, so that a
    \*     simulator can respect exactly the same limits.
    MaxLogLen,            \* Produce: the leader's log never exceeds this length
    MaxLeaderEpoch,       \* every leader election: leaderEpoch never exceeds this
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
    BugLastKnownElrLiteral     \* LastKnownELR per the literal text of §"Other behaviors" 6a

Strategies == {"Aggressive", "Balanced", "None"}

ASSUME
    /\ Brokers /= {} /\ Values /= {}
    /\ NoBroker \notin Brokers
    /\ MinIsrValues \subseteq Nat \ {0} /\ InitMinIsr \in MinIsrValues
    /\ ElrEnabled \in BOOLEAN /\ UncleanRecoveryEnabled \in BOOLEAN
    /\ RecoveryStrategy \in Strategies
    /\ FenceRunningBrokers \in BOOLEAN
    /\ MaxLogLen \in Nat /\ MaxLeaderEpoch \in Nat \ {0}
    /\ MaxBrokerEpoch \in Nat \ {0} /\ MaxRestarts \in Nat
    /\ MaxUncleanShutdowns \in Nat
    /\ \A bug \in {BugHwmOnMaximalIsr, BugHwmIgnoresMinIsr, BugKeepUncleanInElr,
                   BugBalancedFixedReplies, BugAcceptStaleReplies,
                   BugLongestLogIgnoresEpoch, BugLastKnownElrLiteral} : bug \in BOOLEAN
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
(* Controller side:                                                        *)
(*   brokerEpoch[b]  the broker epoch in the controller's registration     *)
(*                   record (equal to the running broker's own epoch)      *)
(*   fenced[b]       the controller has fenced b                           *)
(*   leader          the partition leader, or NoBroker                     *)
(*   leaderEpoch     the partition leader epoch                            *)
(*   isr             the ISR committed by the controller                   *)
(*   elr             the Eligible Leader Replicas                          *)
(*   lastKnownElr    the LastKnownELR                                      *)
(*   lastKnownLeader the LastKnownLeader, or NoBroker                      *)
(*   minIsr          the topic's min.insync.replicas                       *)
(*   replies[b]      the GetReplicaLogInfo reply the controller holds from *)
(*                   b ([brokerEpoch, leaderEpoch, lastEpoch, leo]) or     *)
(*                   NoReply                                               *)
(*                                                                         *)
(* Leader side (meaningful while there is a leader):                       *)
(*   hwm             the partition high watermark: offsets 1..hwm are      *)
(*                   visible to consumers                                  *)
(*   pendingIsr      the ISR proposed by an in-flight AlterPartition, or   *)
(*                   {} when none is in flight; the maximal ISR is         *)
(*                   isr \cup pendingIsr                                   *)
(*   pendingAcks     offsets of acks=all produce requests waiting in the   *)
(*                   leader's purgatory                                    *)
(*                                                                         *)
(* Ghost / history variables (observers, not part of the protocol):        *)
(*   acked             set of <<offset, record>> acknowledged to acks=all  *)
(*                     producers                                           *)
(*   committedLog      the records below the HWM as consumers saw them     *)
(*                     (Len(committedLog) = hwm)                           *)
(*   uncleanShutdowns  number of unclean shutdowns so far                  *)
(*   lostCommitted[b]  the committed records (<<offset, record>>) that b   *)
(*                     held and lost in a restart after an unclean         *)
(*                     shutdown, and has not fetched back since: b counts  *)
(*                     as a KIP "data loss unclean shutdown event" while   *)
(*                     this set is not empty                               *)
(***************************************************************************)
VARIABLES
    alive, log, flushed, shutdownFile,
    brokerEpoch, fenced, leader, leaderEpoch, isr, elr, lastKnownElr,
    lastKnownLeader, minIsr, replies,
    hwm, pendingIsr, pendingAcks,
    acked, committedLog, uncleanShutdowns, lostCommitted

brokerVars     == <<alive, log, flushed, shutdownFile>>
controllerVars == <<brokerEpoch, fenced, leader, leaderEpoch, isr, elr,
                    lastKnownElr, lastKnownLeader, minIsr, replies>>
leaderVars     == <<hwm, pendingIsr, pendingAcks>>
ghostVars      == <<acked, committedLog, uncleanShutdowns, lostCommitted>>
vars == <<brokerVars, controllerVars, leaderVars, ghostVars>>

\* the partition record, the leader state that follows it, and the ghosts the
\* HWM rule updates
partitionVars == <<leader, leaderEpoch, isr, elr, lastKnownElr, lastKnownLeader,
                   hwm, committedLog, acked, pendingIsr, pendingAcks>>

-----------------------------------------------------------------------------
(***************************************************************************)
(* Derived values                                                          *)
(***************************************************************************)
Record == [epoch : 1..MaxLeaderEpoch, value : Values]
Reply  == [brokerEpoch : 1..MaxBrokerEpoch, leaderEpoch : 1..MaxLeaderEpoch,
           lastEpoch : 0..MaxLeaderEpoch, leo : 0..MaxLogLen]

ReplicationFactor == Cardinality(Brokers)
EffMinIsr == EffectiveMinIsr(minIsr, ReplicationFactor)

Unfenced   == {b \in Brokers : ~fenced[b]}
LeaderLive == leader /= NoBroker /\ alive[leader]
MaximalIsr == isr \cup pendingIsr

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

\* The committed records a broker still misses after its log became newLog[b].
StillMissing(newLog) == [b \in Brokers |-> {e \in lostCommitted[b] : ~HoldsRecord(newLog[b], e)}]

\* GetReplicaLogInfo response content of broker b right now.
LogInfo(b) == [brokerEpoch |-> brokerEpoch[b], leaderEpoch |-> leaderEpoch,
               lastEpoch   |-> LastEpoch(log[b]), leo |-> Len(log[b])]

-----------------------------------------------------------------------------
(***************************************************************************)
(* Controller: partition changes and leader election.                      *)
(*                                                                         *)
(* Every controller action first computes the ELR update `st` =            *)
(* [isr, elr, lastKnownElr] (ELRRules!ElrUpdate), then runs the election   *)
(* (ElectionOutcomes), then writes the result with ApplyOutcome.           *)
(* An outcome is [leader, elected, isr, elr, lastKnownElr,                *)
(* lastKnownLeader].                                                       *)
(***************************************************************************)
StateOf == [isr |-> isr, elr |-> elr, lastKnownElr |-> lastKnownElr]

\* KIP-966 §"Other behaviors" 7b: "The controller will record the last ISR
\* member (the leader) when it is fenced."  The ISR loses one member at a time,
\* so when it becomes empty the old ISR is a singleton.
LastKnownLeaderAfter(st) ==
    IF ElrEnabled /\ st.isr = {} /\ isr /= {}
    THEN CHOOSE x \in isr : TRUE          \* isr is a singleton here
    ELSE lastKnownLeader

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
                 \cup LastKnownLeaderCandidates(st.isr, st.elr, lkl, eligible,
                          RecoveryStrategy, UncleanRecoveryEnabled, ElrEnabled)
    IN  IF incumbent /= NoBroker /\ incumbent \in st.isr /\ incumbent \in eligible
        THEN {[leader |-> incumbent, elected |-> FALSE, isr |-> st.isr, elr |-> st.elr,
               lastKnownElr |-> st.lastKnownElr, lastKnownLeader |-> lkl]}
        ELSE IF cands = {}
        THEN {[leader |-> NoBroker, elected |-> FALSE, isr |-> st.isr, elr |-> st.elr,
               lastKnownElr |-> st.lastKnownElr, lastKnownLeader |-> lkl]}
        ELSE {ElectOutcome(st, c) : c \in cands}

(***************************************************************************)
(* The leader's high watermark rule, applied wherever Kafka's leader       *)
(* recomputes it (maybeIncrementLeaderHW: after an append, a follower      *)
(* fetch, an ISR change, becoming leader).                                 *)
(* KIP-966 §"Additional High Watermark advancement requirement": the HWM   *)
(* advances only when the committed ISR has at least min ISR members, and  *)
(* only up to what every member of the maximal ISR has replicated.         *)
(* acks=all requests below the new HWM are answered: acknowledged if the   *)
(* ISR is at least min ISR, else NOT_ENOUGH_REPLICAS_AFTER_APPEND.         *)
(* Arguments are the values after the step; the result is the new          *)
(* [hwm, committedLog, acked, pendingAcks].                                *)
(***************************************************************************)
HwmUpdate(ldr, lg, isrSet, pend, effMin, h, cl, pAcks) ==
    LET live    == ldr /= NoBroker /\ alive[ldr]
        cand    == IF live
                   THEN MinOf({CommonPrefixLen(lg[m], lg[ldr]) : m \in isrSet \cup pend})
                   ELSE 0
        advance == /\ live
                   /\ cand > h
                   /\ HwmMinIsrRequirementMet(Cardinality(isrSet), Cardinality(isrSet \cup pend),
                          effMin, BugHwmOnMaximalIsr, BugHwmIgnoresMinIsr)
        newHwm  == IF advance THEN cand ELSE h
        done    == {o \in pAcks : o <= newHwm}
    IN  [hwm          |-> newHwm,
         committedLog |-> IF advance THEN SubSeq(lg[ldr], 1, newHwm) ELSE cl,
         acked        |-> IF advance /\ Cardinality(isrSet) >= effMin
                          THEN acked \cup {<<o, lg[ldr][o]>> : o \in done}
                          ELSE acked,
         pendingAcks  |-> pAcks \ done]

\* Write the leader-side variables from a HwmUpdate result.
SetHwm(hu) ==
    /\ hwm'          = hu.hwm
    /\ committedLog' = hu.committedLog
    /\ acked'        = hu.acked
    /\ pendingAcks'  = hu.pendingAcks

(***************************************************************************)
(* Write an outcome.  A newly elected leader starts with the HWM it can    *)
(* vouch for: the part of the consumer-visible log it holds (equal to the  *)
(* old HWM unless data was lost), then applies the HWM rule.  A leader     *)
(* change empties the purgatory.  An in-flight AlterPartition is dropped   *)
(* when the partition changes or `rejectPending` (abstraction A2).         *)
(* Elections respect MaxLeaderEpoch.  `newLog` is the log function after   *)
(* this step, `effMin` the effective min ISR after it.                     *)
(***************************************************************************)
ApplyOutcome(o, newLog, rejectPending, effMin) ==
    LET elected  == o.elected
        baseHwm  == IF elected THEN CommonPrefixLen(newLog[o.leader], committedLog)
                               ELSE hwm
        changed  == \/ elected \/ o.leader /= leader \/ o.isr /= isr \/ o.elr /= elr
                    \/ o.lastKnownElr /= lastKnownElr
                    \/ o.lastKnownLeader /= lastKnownLeader
        newPend  == IF changed \/ rejectPending THEN {} ELSE pendingIsr
    IN  /\ elected => leaderEpoch < MaxLeaderEpoch
        /\ leader'          = o.leader
        /\ leaderEpoch'     = IF elected THEN leaderEpoch + 1 ELSE leaderEpoch
        /\ isr'             = o.isr
        /\ elr'             = o.elr
        /\ lastKnownElr'    = o.lastKnownElr
        /\ lastKnownLeader' = o.lastKnownLeader
        /\ pendingIsr'      = newPend
        /\ SetHwm(HwmUpdate(o.leader, newLog, o.isr, newPend, effMin, baseHwm,
                            SubSeq(committedLog, 1, baseHwm),
                            IF elected \/ o.leader /= leader THEN {} ELSE pendingAcks))

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
(* Initial state: every broker registered (epoch 1), unfenced and running, *)
(* empty logs, ISR = all replicas, some replica is the leader in epoch 1.  *)
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
    /\ isr             = Brokers
    /\ elr             = {}
    /\ lastKnownElr    = {}
    /\ lastKnownLeader = NoBroker
    /\ minIsr          = InitMinIsr
    /\ replies         = [b \in Brokers |-> NoReply]
    /\ hwm             = 0
    /\ pendingIsr      = {}
    /\ pendingAcks     = {}
    /\ acked           = {}
    /\ committedLog    = <<>>
    /\ uncleanShutdowns  = 0
    /\ lostCommitted     = [b \in Brokers |-> {}]

-----------------------------------------------------------------------------
(***************************************************************************)
(* Leader and followers                                                    *)
(***************************************************************************)

\* KIP-966 §"Additional High Watermark advancement requirement" (recap of
\* acks): "For ack=1 requests, the server should respond when the message is
\* persisted in the leader's local log. For ack=all requests, the server should
\* respond when the message is persisted in all the ISR members' local log and
\* the size of the ISR member is larger than min ISR."  An acks=all request is
\* rejected (NOT_ENOUGH_REPLICAS) while the ISR is below min ISR, so the
\* producer then falls back to acks=1 (abstraction A7: producers use acks=all
\* whenever the leader accepts it; acks only decide what the producer is told,
\* so this loses no protocol behaviour and acknowledges as much as possible).
\* An accepted acks=all request waits in the purgatory (pendingAcks) for the
\* HWM; an acks=1 request is answered at once.
ProduceAcks == IF Cardinality(isr) >= EffMinIsr THEN "all" ELSE "one"

\* KIP-966 §"Additional High Watermark advancement requirement" (acks recap):
\* the leader appends v in its epoch; an acks=all request joins the purgatory;
\* then the leader applies the HWM rule (with min ISR 1 it may commit at once).
Produce(v) ==
    /\ LeaderLive
    /\ Len(log[leader]) < MaxLogLen
    /\ LET newLog  == [log EXCEPT ![leader] = Append(@, [epoch |-> leaderEpoch, value |-> v])]
           newAcks == IF ProduceAcks = "all" THEN pendingAcks \cup {Len(newLog[leader])}
                                            ELSE pendingAcks
       IN  /\ log' = newLog
           /\ SetHwm(HwmUpdate(leader, newLog, isr, pendingIsr, EffMinIsr,
                               hwm, committedLog, newAcks))
    /\ UNCHANGED <<alive, flushed, shutdownFile, controllerVars, pendingIsr,
                   uncleanShutdowns, lostCommitted>>

\* KIP-966 §"Broker behaviors": "Both the follower and the leader don't have
\* any new behavior to handle ELR. They still refer to ISR for decision
\* making."  A follower (fenced or not: fencing is the controller's view)
\* truncates its divergent suffix and copies the leader's log (abstraction
\* A3); fetched records are not flushed yet.  The leader then applies the HWM
\* rule (§"Additional High Watermark advancement requirement").
FollowerFetch(f) ==
    /\ LeaderLive
    /\ f /= leader /\ alive[f]
    /\ log[f] /= log[leader]
    /\ LET keep   == CommonPrefixLen(log[f], log[leader])
           newLog == [log EXCEPT ![f] = log[leader]]
       IN  /\ log'     = newLog
           /\ flushed' = [flushed EXCEPT ![f] = IF @ < keep THEN @ ELSE keep]
           /\ SetHwm(HwmUpdate(leader, newLog, isr, pendingIsr, EffMinIsr,
                               hwm, committedLog, pendingAcks))
           /\ lostCommitted' = StillMissing(newLog)   \* caught up again?
    /\ UNCHANGED <<alive, shutdownFile, controllerVars, pendingIsr,
                   uncleanShutdowns>>

-----------------------------------------------------------------------------
(***************************************************************************)
(* AlterPartition (the leader proposes an ISR, the controller commits it)  *)
(***************************************************************************)

\* KIP-966 §"ISR invariants": the leader keeps "removing a replica out of ISR
\* if it is lagging"; §"Controller behaviors" 1: "When the controller receives
\* the new ISR, it will trigger an ELR update" (rules 1, 2a, 2b, 2c).  A
\* follower lags when it has not caught up with the leader's log end.  While a
\* shrink is in flight the maximal ISR equals the committed ISR, so the
\* request and its commit are one step here.
ShrinkIsr(f) ==
    /\ LeaderLive
    /\ pendingIsr = {}
    /\ f \in isr \ {leader}
    /\ log[f] /= log[leader]
    /\ LET st == ElrUpdate(isr, elr, lastKnownElr, isr \ {f}, EffMinIsr, {},
                           ElrEnabled, BugSkipElrRule, BugLastKnownElrLiteral)
       IN  \E o \in ElectionOutcomes(st, Unfenced, leader) : ApplyOutcome(o, log, FALSE, EffMinIsr)
    /\ UNCHANGED <<brokerVars, brokerEpoch, fenced, minIsr, replies,
                   uncleanShutdowns, lostCommitted>>

\* KIP-966 §"Additional High Watermark advancement requirement": the maximal
\* ISR "includes the current ISR members and pending-to-add replicas that have
\* not yet been committed to the controller".  Kafka's in-sync test: the
\* follower's log matches the leader's and reaches both the HWM and the leader
\* epoch start offset; only unfenced brokers are proposed (KIP-841).
ProposeIsrExpand(f) ==
    /\ LeaderLive
    /\ pendingIsr = {}
    /\ f \notin isr /\ alive[f] /\ ~fenced[f]
    /\ IsPrefix(log[f], log[leader])
    /\ Len(log[f]) >= hwm
    /\ Len(log[f]) >= EpochStartOffset(log[leader], leaderEpoch)
    /\ pendingIsr' = isr \cup {f}
    /\ UNCHANGED <<brokerVars, controllerVars, hwm, committedLog, acked, pendingAcks,
                   uncleanShutdowns, lostCommitted>>

\* KIP-966 §"Controller behaviors" 1: "AlterPartition request ... When the
\* controller receives the new ISR, it will trigger an ELR update."
CommitAlterPartition ==
    /\ pendingIsr /= {}
    /\ LET st == ElrUpdate(isr, elr, lastKnownElr, pendingIsr, EffMinIsr, {},
                           ElrEnabled, BugSkipElrRule, BugLastKnownElrLiteral)
       IN  \E o \in ElectionOutcomes(st, Unfenced, leader) : ApplyOutcome(o, log, TRUE, EffMinIsr)
    /\ UNCHANGED <<brokerVars, brokerEpoch, fenced, minIsr, replies,
                   uncleanShutdowns, lostCommitted>>

-----------------------------------------------------------------------------
(***************************************************************************)
(* Broker lifecycle                                                        *)
(***************************************************************************)

\* KIP-966 §"Controller behaviors" 2: "The replica gets fenced. When it
\* happens, the controller will trigger the ELR update with the new updated
\* ISR."  b is dead (its session timed out) or, when FenceRunningBrokers, still
\* running but cut off from the controller.  If b led, the controller elects a
\* new leader (election order).
FenceBroker(b) ==
    /\ ~fenced[b]
    /\ alive[b] => FenceRunningBrokers
    /\ fenced' = [fenced EXCEPT ![b] = TRUE]
    /\ \E o \in FenceOutcomes(b) : ApplyOutcome(o, log, b \in pendingIsr, EffMinIsr)
    /\ UNCHANGED <<brokerVars, brokerEpoch, minIsr, replies,
                   uncleanShutdowns, lostCommitted>>

\* KIP-966 §"Controller behaviors" 3: "The replica gets unfenced. If the
\* replica is an ELR member and ISR is empty, this replica will be elected as
\* leader, added to ISR, and removed from ELR."  More generally a leaderless
\* partition runs the election (pre-KIP: the last ISR member returns;
\* §"Delivery plan": the LastKnownLeader once it is unfenced).  Here a running
\* broker fenced by a network partition resumes heartbeating; a restarted
\* broker is unfenced as part of RestartBroker.
UnfenceBroker(b) ==
    /\ fenced[b] /\ alive[b]
    /\ fenced' = [fenced EXCEPT ![b] = FALSE]
    /\ \E o \in ElectionOutcomes(StateOf, Unfenced \cup {b}, leader) :
          ApplyOutcome(o, log, FALSE, EffMinIsr)
    /\ UNCHANGED <<brokerVars, brokerEpoch, minIsr, replies,
                   uncleanShutdowns, lostCommitted>>

\* KIP-966 §"Detection of an unclean shutdown" 1: "During the shutdown, write
\* the current broker epoch in the CleanShutdownFile" (after the log is
\* flushed).  A controlled shutdown: the controller fences b first, moving
\* leadership and the ISR as in FenceBroker.
CleanShutdown(b) ==
    /\ alive[b]
    /\ alive'        = [alive EXCEPT ![b] = FALSE]
    /\ flushed'      = [flushed EXCEPT ![b] = Len(log[b])]
    /\ shutdownFile' = [shutdownFile EXCEPT ![b] = brokerEpoch[b]]
    /\ fenced'       = [fenced EXCEPT ![b] = TRUE]
    /\ IF fenced[b]
       THEN UNCHANGED partitionVars
       ELSE \E o \in FenceOutcomes(b) : ApplyOutcome(o, log, b \in pendingIsr, EffMinIsr)
    /\ UNCHANGED <<log, brokerEpoch, minIsr, replies,
                   uncleanShutdowns, lostCommitted>>

\* KIP-966 §"Motivation": an unclean shutdown "where unflushed data in the OS
\* page cache is lost".  No CleanShutdownFile is written; the controller does
\* not notice until the session times out (FenceBroker) or b registers again.
\* The leader's purgatory dies with it.  What survives of the unflushed suffix
\* is decided at restart (abstraction A4).
UncleanShutdown(b) ==
    /\ alive[b]
    /\ uncleanShutdowns < MaxUncleanShutdowns
    /\ alive'            = [alive EXCEPT ![b] = FALSE]
    /\ uncleanShutdowns' = uncleanShutdowns + 1
    /\ pendingAcks'      = IF b = leader THEN {} ELSE pendingAcks
    /\ UNCHANGED <<log, flushed, shutdownFile, controllerVars, hwm, pendingIsr,
                   acked, committedLog, lostCommitted>>

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
\* The new incarnation is then unfenced ("3. The replica gets unfenced"): it
\* has caught up with the metadata at once (abstraction A1), and a leaderless
\* partition runs its election.  Registration and unfencing are one step
\* (abstraction A8).
\* Pre-KIP (ElrEnabled = FALSE) there is no detection: registering only fences
\* the old incarnation, which keeps the last ISR member in the ISR.
RestartBroker(b, k) ==
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
           /\ \E o \in ElectionOutcomes(RemovalState(b, unclean), Unfenced \cup {b},
                                        incumbent) :
                 ApplyOutcome(o, newLog, b \in pendingIsr, EffMinIsr)
    /\ alive'             = [alive EXCEPT ![b] = TRUE]
    /\ flushed'           = [flushed EXCEPT ![b] = k]
    /\ shutdownFile'      = [shutdownFile EXCEPT ![b] = -1]
    /\ brokerEpoch'       = [brokerEpoch EXCEPT ![b] = @ + 1]
    /\ fenced'            = [fenced EXCEPT ![b] = FALSE]
    /\ LET held == CommonPrefixLen(log[b], committedLog)   \* committed records b had
       IN  lostCommitted' = [lostCommitted EXCEPT ![b] =
                                @ \cup {<<i, committedLog[i]>> : i \in k + 1 .. held}]
    /\ UNCHANGED <<minIsr, replies, uncleanShutdowns>>

-----------------------------------------------------------------------------
(***************************************************************************)
(* Configuration change                                                    *)
(***************************************************************************)

\* KIP-966 §"Other behaviors" 2: "When updating the config
\* min.insync.replicas, if the new min ISR <= current ISR, the ELR will be
\* removed."  (Rule 1 of the ELR update with the unchanged ISR as proposal;
\* below the new min ISR the ELR is kept as it is.)  The effective min ISR is
\* min(min ISR, replication factor) (§"Compatibility").
ChangeMinIsr(m) ==
    /\ m /= minIsr
    /\ minIsr' = m
    /\ LET newEff == EffectiveMinIsr(m, ReplicationFactor)
           st     == ElrUpdate(isr, elr, lastKnownElr, isr, newEff, {},
                               ElrEnabled, BugSkipElrRule, BugLastKnownElrLiteral)
       IN  \E o \in ElectionOutcomes(st, Unfenced, leader) : ApplyOutcome(o, log, FALSE, newEff)
    /\ UNCHANGED <<brokerVars, brokerEpoch, fenced, replies,
                   uncleanShutdowns, lostCommitted>>

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
\* latest reply of each broker; a broker answers again when its answer changed.
SendReplicaLogInfo(b) ==
    /\ InUncleanRecovery
    /\ alive[b] /\ ~fenced[b]
    /\ replies[b] /= LogInfo(b)
    /\ replies' = [replies EXCEPT ![b] = LogInfo(b)]
    /\ UNCHANGED <<brokerVars, brokerEpoch, fenced, leader, leaderEpoch, isr, elr,
                   lastKnownElr, lastKnownLeader, minIsr, leaderVars, ghostVars>>

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
    /\ InUncleanRecovery
    /\ RecoveryCanElect(RecoveryStrategy, lastKnownElr, UsableRepliers,
                        BugBalancedFixedReplies, EffMinIsr)
    /\ \E c \in BestRepliers(UsableRepliers, replies, BugLongestLogIgnoresEpoch) :
          ApplyOutcome(ElectOutcome(StateOf, c), log, TRUE, EffMinIsr)
    /\ UNCHANGED <<brokerVars, brokerEpoch, fenced, minIsr, replies,
                   uncleanShutdowns, lostCommitted>>

\* KIP-966 §"Delivery plan": without the unclean recovery manager (or pre-KIP),
\* unclean.leader.election.enable=true "will be randomly choosing an unfenced
\* replica as it is today" when no ISR / unfenced ELR member exists.
UncleanLeaderElection ==
    /\ NoCleanCandidate
    /\ Decision = "UncleanElection"
    /\ \E c \in Unfenced : ApplyOutcome(ElectOutcome(StateOf, c), log, TRUE, EffMinIsr)
    /\ UNCHANGED <<brokerVars, brokerEpoch, fenced, minIsr, replies,
                   uncleanShutdowns, lostCommitted>>

-----------------------------------------------------------------------------
(***************************************************************************)
(* Next-state relation.  Each disjunct is a named operator so that TLC     *)
(* labels every transition with its action name (the quantifiers range     *)
(* over CONSTANT sets only).                                               *)
(***************************************************************************)
ProduceStep            == \E v \in Values : Produce(v)  \* KIP-966 §"Additional High Watermark advancement requirement"
FollowerFetchStep      == \E f \in Brokers : FollowerFetch(f)  \* KIP-966 §"Broker behaviors"
ShrinkIsrStep          == \E f \in Brokers : ShrinkIsr(f)  \* KIP-966 §"ISR invariants"
ProposeIsrExpandStep   == \E f \in Brokers : ProposeIsrExpand(f)  \* KIP-966 §"Additional High Watermark advancement requirement"
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
    \/ ShrinkIsrStep
    \/ ProposeIsrExpandStep
    \/ CommitAlterPartition
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
    /\ isr             \subseteq Brokers
    /\ elr             \subseteq Brokers
    /\ lastKnownElr    \subseteq Brokers
    /\ lastKnownLeader \in Brokers \cup {NoBroker}
    /\ minIsr          \in MinIsrValues
    /\ replies         \in [Brokers -> Reply \cup {NoReply}]
    /\ hwm             \in 0..MaxLogLen
    /\ pendingIsr      \subseteq Brokers
    /\ pendingAcks     \subseteq 1..MaxLogLen
    /\ acked           \subseteq (1..MaxLogLen) \X Record
    /\ committedLog    \in Seq(Record) /\ Len(committedLog) = hwm
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

\* The leader is an ISR member and is not fenced.
LeaderInIsr == leader /= NoBroker => leader \in isr
LeaderUnfenced == leader /= NoBroker => ~fenced[leader]

\* KIP-966 §"ISR invariants": a fenced replica is removed from the ISR (with
\* ELR enabled the ISR may become empty instead of keeping the last member).
FencedNotInIsr == ElrEnabled => \A b \in isr : ~fenced[b]

\* Pre-KIP-966 the ISR never becomes empty.
IsrNonEmptyWithoutElr == ~ElrEnabled => isr /= {}

\* The LastKnownELR only holds replicas that left ISR/ELR (§"Other behaviors" 6).
LastKnownElrDisjoint == lastKnownElr \cap (isr \cup elr) = {}

\* An in-flight AlterPartition comes from the current leader.
PendingIsrHasLeader == pendingIsr /= {} => leader \in pendingIsr

\* The HWM never passes the running leader's log end.
HwmWithinLeaderLog == LeaderLive => hwm <= Len(log[leader])

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
\* consumer-visible HWM never decreases (a new leader's HWM is the part of the
\* consumer-visible log it holds).
HighWatermarkMonotonic == [][WithinTolerance' => hwm' >= hwm]_vars

\* The same, by content: within the tolerance the committed log only grows by
\* extension (a length check alone would let an acks=1 record below the HWM
\* be replaced by another record at the same offset).
CommittedLogOnlyExtends == [][WithinTolerance' => IsPrefix(committedLog, committedLog')]_vars

\* KIP-966 §"Additional High Watermark advancement requirement": "High
\* Watermark can only advance if the ISR size is larger or equal to
\* min.insync.replicas", the ISR being "the latest ISR membership persisted by
\* the controller, not the maximal ISR".  Checked on every step, directly.
HwmAdvancesOnlyWithMinIsr ==
    [][hwm' > hwm => Cardinality(isr') >= EffectiveMinIsr(minIsr', ReplicationFactor)]_vars

-----------------------------------------------------------------------------
(***************************************************************************)
(* LIVENESS                                                                *)
(*                                                                         *)
(* Fairness: the protocol's own steps are weakly fair -- followers fetch,  *)
(* the leader proposes ISR expansions and the controller commits them, the *)
(* controller fences a dead broker once its session times out, a running   *)
(* fenced broker heartbeats again (a network partition heals), replicas    *)
(* answer GetReplicaLogInfo and the controller completes the unclean       *)
(* recovery / unclean election.  The environment's steps are not fair:     *)
(* produce requests, shutdowns, restarts, ISR shrinks (a timing choice),   *)
(* fencing a running broker, min ISR changes.                              *)
(***************************************************************************)
Fairness ==
    /\ \A f \in Brokers : WF_vars(FollowerFetch(f))
    /\ \A f \in Brokers : WF_vars(ProposeIsrExpand(f))
    /\ WF_vars(CommitAlterPartition)
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

BalancedRecoveryEventuallyElects ==
    BalancedRecoveryReady ~> (leader /= NoBroker \/ ~BalancedRecoveryReady)

\* KIP-966 §"Additional High Watermark advancement requirement": while the
\* committed ISR meets min ISR and the running leader has records above the
\* HWM, the HWM advances (the followers fetch, a dead ISR member is fenced and
\* leaves the ISR) -- unless the ISR falls below min ISR or the leader stops.
HwmCanAdvance ==
    /\ LeaderLive
    /\ Cardinality(isr) >= EffMinIsr
    /\ hwm < Len(log[leader])

HwmEventuallyAdvances ==
    \A h \in 0..MaxLogLen : (HwmCanAdvance /\ hwm = h) ~> (hwm /= h \/ ~HwmCanAdvance)

\* KIP-966 §"ISR invariants" / Kafka's ISR expansion: a running, unfenced
\* replica outside the ISR, under a running leader, eventually rejoins the
\* ISR (it fetches, the leader proposes it, the controller commits) -- unless
\* it stops, is fenced, or the leader stops.
IsrEventuallyReexpands ==
    \A f \in Brokers :
        (LeaderLive /\ alive[f] /\ ~fenced[f] /\ f \notin isr)
            ~> (f \in isr \/ ~LeaderLive \/ ~alive[f] \/ fenced[f])

=============================================================================
