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
(* VIEW: ZombieView leaves out what no action's guard depends on, except   *)
(* through itself: the high watermarks (they only feed the HWM fields of   *)
(* FetchResponses, which the view blanks out, other high watermarks and    *)
(* the ghost history), the ghost variables, restartCount (constant with    *)
(* MaxRestarts = 0), KRaft.tla's eager window fetchedSinceCheck            *)
(* (LeaderProgressTimeout's guard on it is always TRUE:                    *)
(* EagerWindowNeverAMajority, checked in kraft-deep-5voters-progress;      *)
(* KRaftProgress decides with progressWindow), and of a leader's end       *)
(* offsets all but which voters endorsed it (>= 0: SendBeginQuorumEpoch's  *)
(* guard; the values feed only the high watermark and Resign's successor   *)
(* order, and Resign, which needs a slot per other voter, cannot fire with *)
(* one message in flight).  States equal in the view have the same enabled *)
(* actions and successors equal up to what it leaves out, so a formula that*)
(* does not mention it is checked exactly.  The bug config                 *)
(* kraft-bug-5voters-progress-any-fetch has no VIEW: TLC 2.15 cannot print *)
(* a lasso found under VIEW and SYMMETRY together.                         *)
(***************************************************************************)
BlankHighWatermark(m) ==
    IF m.type = "FetchResponse" THEN [m EXCEPT !.highWatermark = -1] ELSE m
(***************************************************************************)
(* State constraint: nothing of epoch MaxEpoch is explored beyond the      *)
(* election a timer voter starts into it (it may be a Candidate of         *)
(* MaxEpoch; no other replica reaches MaxEpoch and no message of MaxEpoch  *)
(* is in flight).  Exact for ZombieLeaderStepsDown, although TLC cannot in *)
(* general check liveness under a constraint (its fairness may become      *)
(* false in the cut states): a leader of MaxEpoch is exempt from the       *)
(* property, so a counterexample keeps a timer voter Leader of an epoch    *)
(* below MaxEpoch forever; while it leads such an epoch no replica is in a *)
(* later one (only TimeoutVoters start elections, and with one timer voter *)
(* nobody else starts one), so every state of such a behaviour satisfies   *)
(* the constraint and keeps all its successors, the expiry's successor     *)
(* included (a Candidate of MaxEpoch that has sent nothing yet).  Needs    *)
(* TimeoutVoters to be a single voter.                                     *)
(***************************************************************************)
NoStepIntoMaxEpoch ==
    /\ \A i \in Server : currentEpoch[i] = MaxEpoch =>
          i \in TimeoutVoters /\ role[i] = "Candidate"
    /\ \A m \in BagToSet(msgs) : m.epoch < MaxEpoch

ZombieView ==
    <<currentEpoch, votedId, leaderId, log, role, votesGranted, votesRejected,
      [i \in Server |-> {v \in Voters : followerEndOffset[i][v] >= 0}],
      {<<BlankHighWatermark(m), msgs[m]>> : m \in DOMAIN msgs},
      progressWindow>>

=============================================================================
