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

=============================================================================
