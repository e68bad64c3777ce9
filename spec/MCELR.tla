------------------------------- MODULE MCELR -------------------------------
(***************************************************************************)
(* Model-checking wrapper for ELR.tla.  Everything specific to TLC lives   *)
(* here and in tlc_configs/elr-*.cfg: the symmetry sets.  The bounds are   *)
(* ELR.tla's environment-bound constants (MaxLogLen, MaxLeaderEpoch,       *)
(* MaxBrokerEpoch, MaxUncleanShutdowns), whose values each cfg sets.       *)
(*                                                                         *)
(* Symmetry is sound here for the safety checks only (invariants and       *)
(* [][A]_vars properties): no constant distinguishes two brokers or two    *)
(* values, and the spec never uses CHOOSE over a set that a permutation    *)
(* could change (the one CHOOSE over brokers picks from a singleton).      *)
(***************************************************************************)
EXTENDS ELR, TLC

(***************************************************************************)
(* Bounded models end in states where only a bound stops progress (every   *)
(* broker down and no restart left, or the last leader epoch used and      *)
(* nothing else to do).  TLC 2.15 has no CHECK_DEADLOCK keyword, so the    *)
(* model lets those states stutter; a state that cannot move while no      *)
(* bound is exhausted is still reported as a deadlock.                     *)
(* (Argument: with leaderEpoch < MaxLeaderEpoch a running broker can always *)
(* be fenced or unfenced, and a stopped broker whose epoch is below        *)
(* MaxBrokerEpoch can always restart while Restarts < MaxRestarts.)       *)
(***************************************************************************)
BoundsExhausted ==
    \/ leaderEpoch = MaxLeaderEpoch
    \/ \A b \in Brokers : ~alive[b] /\ (brokerEpoch[b] = MaxBrokerEpoch \/ Restarts = MaxRestarts)

IdleAtBounds == BoundsExhausted /\ UNCHANGED vars

MCNext == Next \/ IdleAtBounds

\* Brokers are interchangeable, and so are record payloads.
BrokerSymmetry      == Permutations(Brokers)
BrokerValueSymmetry == Permutations(Brokers) \cup Permutations(Values)

=============================================================================
