------------------------------ MODULE ELRRules ------------------------------
(***************************************************************************)
(* KIP-966 (Eligible Leader Replicas): the controller's and the leader's   *)
(* decision rules as small PURE operators.                                 *)
(*                                                                         *)
(* Nothing here reads or writes a state variable: every operator takes its *)
(* inputs as arguments and returns a value.  spec/ELR.tla calls these      *)
(* operators from its actions, and the Python reference implementation     *)
(* mirrors them one to one, so keep each one small and literal.            *)
(*                                                                         *)
(* Conventions                                                             *)
(*   - sets of brokers are TLA+ sets (isr, elr, lastKnownElr, ...);        *)
(*   - a log is a sequence of records [epoch |-> e, value |-> v]; offset i *)
(*     is log[i] (offsets start at 1, "LEO" = Len(log));                   *)
(*   - strategies are the strings "Aggressive", "Balanced", "None".        *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, Sequences

-----------------------------------------------------------------------------
(***************************************************************************)
(* Effective min ISR.                                                      *)
(* KIP-966 §"Additional High Watermark advancement requirement" and        *)
(* §"Compatibility ... High Watermark advance requirement": the effective  *)
(* min.insync.replicas is min(min.insync.replicas, replication factor).    *)
(***************************************************************************)
EffectiveMinIsr(minIsr, replicationFactor) ==
    IF minIsr < replicationFactor THEN minIsr ELSE replicationFactor

-----------------------------------------------------------------------------
(***************************************************************************)
(* ELR update.  KIP-966 §"Eligible Leader Replicas" / "Controller          *)
(* behaviors": "ELR update will take a proposed ISR and the controller     *)
(* does the following:                                                     *)
(*   1. When the proposed ISR is larger or equal to min ISR, the           *)
(*      controller will update the ISR and empty the ELR.                  *)
(*   2. When the proposed ISR is smaller than min ISR, the controller will *)
(*      a. retain the current members of the ELR.                          *)
(*      b. add (the current ISR - the proposed ISR) to ELR.                *)
(*      c. remove the duplicate member in both ISR and ELR from ELR."      *)
(* Controller behavior 4: a broker that registers after an unclean         *)
(* shutdown is removed from ISR and ELR: it is passed in `unclean` and is  *)
(* never kept in (or added to) the ELR.                                    *)
(* Other behaviors 6: LastKnownELR collects the members that left ISR+ELR  *)
(* without entering the ELR (i.e. the unclean ones) while the ISR is below *)
(* min ISR, and is cleaned when the ISR reaches min ISR (rule 1).          *)
(*                                                                         *)
(* elrEnabled = FALSE gives the pre-KIP-966 behaviour: there is no ELR,    *)
(* and the ISR never becomes empty (the last member stays in it).          *)
(*                                                                         *)
(* skipRule (a bug switch) drops one rule: "off" (correct), "1" (the ELR   *)
(* is not emptied when the proposed ISR reaches min ISR; rule 2 applies    *)
(* instead), "2a" (current ELR members are not retained), "2b" (removed    *)
(* ISR members are not added), "2c" (members of the proposed ISR are not   *)
(* removed from the ELR).                                                  *)
(***************************************************************************)
ElrRule1Applies(proposedIsr, effMinIsr) == Cardinality(proposedIsr) >= effMinIsr

\* rules 2a + 2b + 2c, minus the replicas detected as unclean (behavior 4)
ElrAfterRule2(isr, elr, proposedIsr, unclean, skipRule) ==
    LET retained == IF skipRule = "2a" THEN {} ELSE elr                    \* 2a
        added    == IF skipRule = "2b" THEN {} ELSE isr \ proposedIsr      \* 2b
        deduped  == IF skipRule = "2c" THEN retained \cup added            \* 2c
                    ELSE (retained \cup added) \ proposedIsr
    IN  deduped \ unclean

\* Other behaviors 6a: the LastKnownELR keeps every member of ISR/ELR/LastKnownELR
\* that is neither in the new ISR nor in the new ELR.  This is BROADER than the
\* KIP's sentence ("when an ELR member has an unclean shutdown, it will be
\* removed from ELR and added to the LastKnownELR"): an ISR member removed
\* because it registered after an unclean shutdown joins the LastKnownELR too.
\* Without that, Balanced recovery can wait for nobody and lose acknowledged
\* data (docs/spec-elr.md §3 and finding 11; LastKnownElrLiteral6a below).
LastKnownElrAfterRule2(isr, elr, lastKnownElr, proposedIsr, newElr) ==
    ((lastKnownElr \cup elr \cup isr) \ proposedIsr) \ newElr

\* Other behaviors 6a read literally (a bug switch, BugLastKnownElrLiteral): only
\* members of the current ELR that leave it join the LastKnownELR.
LastKnownElrLiteral6a(elr, lastKnownElr, proposedIsr, newElr) ==
    ((lastKnownElr \cup elr) \ proposedIsr) \ newElr

\* literal6a: use LastKnownElrLiteral6a instead of LastKnownElrAfterRule2.
ElrUpdate(isr, elr, lastKnownElr, proposedIsr, effMinIsr, unclean, elrEnabled,
          skipRule, literal6a) ==
    IF ~elrEnabled
    THEN [isr          |-> IF proposedIsr = {} THEN isr ELSE proposedIsr,
          elr          |-> {},
          lastKnownElr |-> {}]
    ELSE IF ElrRule1Applies(proposedIsr, effMinIsr) /\ skipRule /= "1"
    THEN [isr |-> proposedIsr, elr |-> {}, lastKnownElr |-> {}]          \* rule 1
    ELSE LET newElr == ElrAfterRule2(isr, elr, proposedIsr, unclean, skipRule) \* rule 2
         IN  [isr          |-> proposedIsr,
              elr          |-> newElr,
              lastKnownElr |-> IF literal6a
                               THEN LastKnownElrLiteral6a(elr, lastKnownElr,
                                                          proposedIsr, newElr)
                               ELSE LastKnownElrAfterRule2(isr, elr, lastKnownElr,
                                                           proposedIsr, newElr)]

-----------------------------------------------------------------------------
(***************************************************************************)
(* High watermark rule.  KIP-966 §"Additional High Watermark advancement   *)
(* requirement": the HWM can only advance if the ISR size is at least      *)
(* min.insync.replicas, where the ISR is "the latest ISR membership        *)
(* persisted by the controller, not the maximal ISR"; and "if maximal ISR  *)
(* > ISR, the message should be replicated to the maximal ISR before       *)
(* covering the message under HWM".                                        *)
(*   committedIsrSize: |ISR committed by the controller|                   *)
(*   maximalIsrSize:   |committed ISR \cup pending AlterPartition ISR|     *)
(* The two bug switches give the rules the KIP replaces:                   *)
(*   bugUseMaximalIsr: min ISR checked against the maximal ISR (the        *)
(*     KIP's 3-replica example, "Currently, we would advance HWM because   *)
(*     it replicated to 2 brokers (the ones in Maximal ISR)");             *)
(*   bugIgnoreMinIsr:  no min ISR requirement at all (pre-KIP rule).       *)
(***************************************************************************)
HwmMinIsrRequirementMet(committedIsrSize, maximalIsrSize, effMinIsr,
                        bugUseMaximalIsr, bugIgnoreMinIsr) ==
    CASE bugIgnoreMinIsr  -> TRUE
      [] bugUseMaximalIsr -> maximalIsrSize >= effMinIsr
      [] OTHER            -> committedIsrSize >= effMinIsr

\* The new HWM: the smallest replicated offset over the maximal ISR
\* (`replicated` is the set of offsets each maximal ISR member is known to have).
MinOf(S) == CHOOSE m \in S : \A x \in S : m <= x

-----------------------------------------------------------------------------
(***************************************************************************)
(* Log helpers.                                                            *)
(***************************************************************************)
\* Last written leader epoch (GetReplicaLogInfo "LastWrittenLeaderEpoch"); 0 for an empty log.
LastEpoch(log) == IF log = <<>> THEN 0 ELSE log[Len(log)].epoch

\* Length of the longest common prefix of two logs.  This abstracts Kafka's
\* divergence detection (OffsetsForLeaderEpoch / diverging epoch in Fetch).
CommonPrefixLen(a, b) ==
    LET n    == IF Len(a) < Len(b) THEN Len(a) ELSE Len(b)
        diff == {i \in 1..n : a[i] /= b[i]}
    IN  IF diff = {} THEN n ELSE MinOf(diff) - 1

IsPrefix(a, b) == Len(a) <= Len(b) /\ SubSeq(b, 1, Len(a)) = a

\* Offset before the first record written in `epoch` (the leader epoch start
\* offset): number of records of earlier epochs.
EpochStartOffset(log, epoch) == Cardinality({i \in DOMAIN log : log[i].epoch < epoch})

-----------------------------------------------------------------------------
(***************************************************************************)
(* Leader election order.  KIP-966 §"Unclean recovery" (and §"Delivery     *)
(* plan" when the unclean recovery manager is disabled):                   *)
(*   1. If there are other ISR members, choose an ISR member.              *)
(*   2. If there are unfenced ELR members, choose an ELR member.           *)
(*   3. If there are fenced ELR members                                    *)
(*      a. Aggressive: an unclean recovery will happen.                    *)
(*      b. Otherwise, wait for the fenced ELR members to be unfenced.      *)
(*   4. If there are no ELR members.                                       *)
(*      a. Aggressive: the controller will do the unclean recovery.        *)
(*      b. Balanced: unclean recovery when all the LastKnownELR are        *)
(*         unfenced.                                                       *)
(*      c. None: wait for the user operations.                             *)
(* As in Kafka's controller, an ELR member is only a clean candidate when  *)
(* the ISR is empty ("If the replica is an ELR member and ISR is empty,    *)
(* this replica will be elected as leader", controller behavior 3).        *)
(* `eligible` = the unfenced brokers.                                      *)
(***************************************************************************)
CleanCandidates(isr, elr, eligible, elrEnabled) ==
    IF isr \cap eligible /= {} THEN isr \cap eligible          \* order 1
    ELSE IF elrEnabled /\ isr = {} THEN elr \cap eligible      \* order 2
    ELSE {}

(***************************************************************************)
(* Delivery plan, phase 1 (unclean recovery manager not enabled), with     *)
(* unclean.leader.election.enable=false (~ strategy Balanced): "If there   *)
(* are no ELR members ... elect the LastKnownLeader once it is unfenced."  *)
(***************************************************************************)
LastKnownLeaderCandidates(isr, elr, lastKnownLeader, eligible, strategy,
                          managerEnabled, elrEnabled) ==
    IF /\ elrEnabled /\ ~managerEnabled /\ strategy = "Balanced"
       /\ isr = {} /\ elr = {}
       /\ lastKnownLeader \in eligible
    THEN {lastKnownLeader}
    ELSE {}

(***************************************************************************)
(* What the controller does for a leaderless partition with no clean       *)
(* candidate (order steps 3 and 4).  Returns one of                        *)
(*   "UncleanRecovery"       run GetReplicaLogInfo and elect from replies  *)
(*   "UncleanElection"       elect any unfenced replica (pre-KIP / phase 1 *)
(*                           unclean.leader.election.enable=true)          *)
(*   "WaitForElr"            3b: wait for a fenced ELR member              *)
(*   "WaitForLastKnownElr"   4b: Balanced, some LastKnownELR still fenced  *)
(*   "WaitForLastKnownLeader" phase 1 Balanced: wait for LastKnownLeader   *)
(*   "WaitForIsr"            pre-KIP: wait for the last ISR member         *)
(*   "WaitForOperator"       4c: strategy None                             *)
(* bugFixedReplies: the rejected alternative "The controller elects the    *)
(* leader when a given number of replicas have replied": Balanced does not *)
(* wait for the LastKnownELR members to be unfenced.                       *)
(***************************************************************************)
RecoveryDecision(strategy, managerEnabled, elrEnabled, isr, elr, lastKnownElr,
                 eligible, bugFixedReplies) ==
    CASE ~elrEnabled ->
            IF strategy = "Aggressive" THEN "UncleanElection" ELSE "WaitForIsr"
      [] isr /= {} ->                 \* ISR members exist but none is eligible
            IF strategy = "Aggressive"
            THEN (IF managerEnabled THEN "UncleanRecovery" ELSE "UncleanElection")
            ELSE "WaitForIsr"
      [] elr /= {} ->                 \* 3: only fenced ELR members
            IF strategy = "Aggressive"
            THEN (IF managerEnabled THEN "UncleanRecovery" ELSE "UncleanElection")
            ELSE "WaitForElr"
      [] strategy = "Aggressive" ->   \* 4a
            IF managerEnabled THEN "UncleanRecovery" ELSE "UncleanElection"
      [] strategy = "Balanced" ->     \* 4b
            IF ~managerEnabled THEN "WaitForLastKnownLeader"
            ELSE IF bugFixedReplies \/ lastKnownElr \subseteq eligible
                 THEN "UncleanRecovery"
                 ELSE "WaitForLastKnownElr"
      [] OTHER -> "WaitForOperator"   \* 4c

-----------------------------------------------------------------------------
(***************************************************************************)
(* Unclean recovery.  KIP-966 §"Unclean recovery", §"GetReplicaLogInfo".   *)
(* A reply is [brokerEpoch, leaderEpoch, lastEpoch, leo]:                  *)
(*   brokerEpoch  the replier's broker epoch ("This can avoid electing a   *)
(*                broker that has rebooted after it made the response")   *)
(*   leaderEpoch  the partition leader epoch in the replier's metadata     *)
(*                cache ("to fence stale GetReplicaLogInfo responses")     *)
(*   lastEpoch    LastWrittenLeaderEpoch                                   *)
(*   leo          LogEndOffset                                             *)
(***************************************************************************)
ReplyIsFresh(reply, currentBrokerEpoch, currentLeaderEpoch) ==
    /\ reply.brokerEpoch = currentBrokerEpoch
    /\ reply.leaderEpoch = currentLeaderEpoch

\* "The one with the highest leader epoch plus the longest log end offset will
\* be the new leader."  bugIgnoreEpoch compares log end offsets only.
ReplyBetter(r1, r2, bugIgnoreEpoch) ==
    IF bugIgnoreEpoch THEN r1.leo > r2.leo
    ELSE \/ r1.lastEpoch > r2.lastEpoch
         \/ r1.lastEpoch = r2.lastEpoch /\ r1.leo > r2.leo

\* The brokers whose reply no other reply beats (`replyOf` maps each broker of
\* `repliers` to its reply).
BestRepliers(repliers, replyOf, bugIgnoreEpoch) ==
    {b \in repliers : \A c \in repliers : ~ReplyBetter(replyOf[c], replyOf[b], bugIgnoreEpoch)}

(***************************************************************************)
(* When may the controller finish the unclean recovery?                    *)
(*   Balanced:   "all the LastKnownELR members have replied, plus the      *)
(*               replicas replied within the timeout";                     *)
(*   Aggressive: "any replicas replied within a fixed amount of time OR    *)
(*               the first response received after the timeout".           *)
(* bugFixedReplies (rejected alternative): Balanced elects as soon as      *)
(* `fixedCount` replicas (min ISR) have replied.                           *)
(***************************************************************************)
RecoveryCanElect(strategy, lastKnownElr, repliers, bugFixedReplies, fixedCount) ==
    /\ repliers /= {}
    /\ strategy = "Balanced" =>
          IF bugFixedReplies THEN Cardinality(repliers) >= fixedCount
          ELSE lastKnownElr \subseteq repliers

=============================================================================
