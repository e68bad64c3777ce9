----------------------------- MODULE MCKRaftProgress -----------------------------
(***************************************************************************)
(* Model-checking wrapper for KRaftProgress.tla: MCKRaft.tla's clusterId   *)
(* assignment and symmetry sets, and two reachability witnesses (each a    *)
(* ci configuration expects its violation).                                *)
(***************************************************************************)
EXTENDS KRaftProgress, MCKRaft

\* A leader's progress check can pass: a majority fetched in its window.
ProgressCheckNeverPasses ==
    \A i \in Server : ~(role[i] = "Leader" /\ IsVoterMajority(progressWindow[i] \cup {i}))

\* A leader heard from some voters, but not from a majority: its expiring
\* timer starts an election although the window is not empty.  Unreachable
\* with 3 voters (one fetcher and the leader are a majority), reachable
\* with 5: this is where "no Fetch from a majority" decides.
NoPartialProgressWindow ==
    \A i \in Server : role[i] = "Leader" =>
        \/ progressWindow[i] = {}
        \/ IsVoterMajority(progressWindow[i] \cup {i})

\* KIP-595 before its revision: no leader progress timeout (the leader's
\* timer never has to expire).  kraft-bug-no-leader-progress-timeout checks
\* that ZombieLeaderStepsDown then fails, i.e. that the property depends on
\* the timer and is not vacuous.
NoProgressTimerLiveSpec == ProgressSpec /\ Fairness

(***************************************************************************)
(* Reductions for the 5-voter zombie-leader configuration                  *)
(* (kraft-ci-5voters-zombie-leader), where only n1's timers fire.          *)
(*                                                                         *)
(* Symmetry: TimerClassSymmetry (MCKRaft.tla) permutes the four voters     *)
(* whose timers never fire.  TLC's symmetry reduction can miss liveness    *)
(* violations when the fairness conditions or the property distinguish    *)
(* the permuted replicas; ZombieLiveSpec's fairness and                    *)
(* ZombieLeaderStepsDown name only TimeoutVoters = {n1}, and               *)
(* ProgressTimerSparesHeardLeader and the invariants checked there quantify *)
(* over all servers, so every formula TLC evaluates is invariant under the *)
(* permutations and the reduced graph is exact for them.                   *)
(*                                                                         *)
(* VIEW: ZombieView leaves out variables no action's guard or successor    *)
(* state depends on, except through themselves: the high watermarks (they  *)
(* only feed the HWM fields of FetchResponses and the ghost history), the  *)
(* ghost variables, restartCount (constant with MaxRestarts = 0), and      *)
(* KRaft.tla's eager window fetchedSinceCheck (LeaderProgressTimeout's     *)
(* guard on it is always TRUE: EagerWindowNeverAMajority, checked in       *)
(* kraft-deep-5voters-progress; KRaftProgress decides with progressWindow).*)
(* States equal in the view have the same enabled actions and successors  *)
(* equal up to those variables, so a property that does not mention them   *)
(* is checked exactly.                                                     *)
(***************************************************************************)
ZombieView ==
    <<currentEpoch, votedId, leaderId, log, role, votesGranted, votesRejected,
      followerEndOffset, msgs, progressWindow>>

=============================================================================
