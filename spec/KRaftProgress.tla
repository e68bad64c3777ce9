------------------------------ MODULE KRaftProgress ------------------------------
(***************************************************************************)
(* KRaft.tla with the leader progress timeout checked when its timer       *)
(* expires (KIP-595's revision, §"Leader Progress Timeout": "if the leader *)
(* did not receive Fetch requests from a majority of the quorum for that   *)
(* amount of time, it would begin a new election").                        *)
(*                                                                         *)
(* Why a separate module.  KRaft.tla closes the leader's window the moment *)
(* its fetchers and the leader form a majority (RecordFetch), as Kafka's   *)
(* LeaderState does, and lets the timer expire at any moment, as every     *)
(* timer of the untimed model.  Then fetchedSinceCheck \cup {i} is never a *)
(* majority in a reachable state (it would have been emptied), so          *)
(* LeaderProgressTimeout's guard is always TRUE, for 3 voters and for 5:   *)
(* the untimed model cannot say "no Fetch from a majority within the       *)
(* window" (that is a statement about time).  Here the window is kept      *)
(* until the timer expires, and the expiry decides: a majority fetched ->  *)
(* the check passes and the timer restarts (LeaderProgressCheckPassed);    *)
(* otherwise the leader starts an election (LeaderProgressExpired).  The   *)
(* timer may still expire at any moment, so every timing is admitted; what *)
(* is removed is an election although a majority fetched in the window.   *)
(* KRaft.tla's variables and actions are unchanged (its reachable states,  *)
(* pinned counts and the trace checker's graphs stay as they are).         *)
(***************************************************************************)
EXTENDS KRaft

\* Protocol-rule switch (FALSE in every configuration but
\* kraft-bug-5voters-progress-any-fetch): the progress check counts any Fetch
\* in the window as progress, instead of Fetch requests "from a majority of
\* the quorum".  Indistinguishable from the rule with 3 voters (one fetcher
\* and the leader are a majority); with 5 it keeps a leader that hears from
\* a minority in office forever.
CONSTANT BugProgressAnyFetch

ASSUME BugProgressAnyFetch \in BOOLEAN

VARIABLE
    progressWindow  \* [Server -> SUBSET Voters]: leader i, the voters whose
                    \* Fetch of i's epoch reached i since its progress timer
                    \* last (re)started; {} for a replica that is not Leader

progressVars == <<vars, progressWindow>>

ProgressInit ==
    /\ Init
    /\ progressWindow = [i \in Server |-> {}]

\* A replica that is not Leader after the step has no window (a new leader
\* starts with a fresh timer, KIP-595 §"Vote Response Handling" step 3).
KeepWindows ==
    progressWindow' = [i \in Server |-> IF role'[i] = "Leader" THEN progressWindow[i] ELSE {}]

\* A Fetch of voter m.src reaches leader m.dest in its epoch (the cases of
\* KIP-595 §"FetchRequest Handling" step 4 that RecordFetch counts).
CountsForProgress(m) ==
    /\ role[m.dest] = "Leader"
    /\ m.epoch = currentEpoch[m.dest]
    /\ m.src \in Voters
    /\ ClusterIdMatches(m)

\* KIP-595 §"FetchRequest Handling" and the revision's §"Leader Progress
\* Timeout": the fetch is handled as in KRaft.tla and joins the window.
ReceiveFetchRequestInWindow ==
    \E m \in BagToSet(msgs) :
        /\ m.type = "FetchRequest"
        /\ HandleFetchRequest(m)
        /\ progressWindow' = [progressWindow EXCEPT ![m.dest] =
                                 IF CountsForProgress(m) THEN @ \cup {m.src} ELSE @]

\* Revision §"Leader Progress Timeout": did "Fetch requests from a majority
\* of the quorum" reach leader i within the window (the leader counts)?
ProgressCheckPasses(i) ==
    IF BugProgressAnyFetch THEN progressWindow[i] # {}
    ELSE IsVoterMajority(progressWindow[i] \cup {i})

\* Revision §"Leader Progress Timeout": the timer expires and a majority
\* (the leader included) fetched in the window: the timer restarts.
LeaderProgressCheckPassed(i) ==
    /\ role[i] = "Leader"
    /\ ProgressCheckPasses(i)
    /\ progressWindow' = [progressWindow EXCEPT ![i] = {}]
    /\ UNCHANGED vars

\* Revision §"Leader Progress Timeout": the timer expires and no majority
\* fetched in the window: "it would begin a new election" (KRaft.tla's
\* LeaderProgressTimeout, with its bounds).
LeaderProgressExpired(i) ==
    /\ ~ProgressCheckPasses(i)
    /\ LeaderProgressTimeout(i)
    /\ progressWindow' = [progressWindow EXCEPT ![i] = {}]

\* Every other action of KRaft.tla, unchanged, keeping the windows.
OtherStep ==
    \/ \E i \in Server : Timeout(i)
    \/ \E i \in Server : Resign(i)
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
    \/ ReceiveFetchResponse
    \/ DropMessage
    \/ DuplicateMessage

ProgressNext ==
    \/ OtherStep /\ KeepWindows
    \/ ReceiveFetchRequestInWindow
    \/ \E i \in Server : LeaderProgressCheckPassed(i)
    \/ \E i \in Server : LeaderProgressExpired(i)

ProgressSpec == ProgressInit /\ [][ProgressNext]_progressVars

(***************************************************************************)
(*                              INVARIANTS                                 *)
(***************************************************************************)
ProgressTypeOK ==
    /\ TypeOK
    /\ progressWindow \in [Server -> SUBSET Voters]
    /\ \A i \in Server : role[i] # "Leader" => progressWindow[i] = {}

\* The finding on KRaft.tla's window (see the header): its guard never
\* decides.  Checked in the 5-voter configuration.
EagerWindowNeverAMajority ==
    \A i \in Server : role[i] = "Leader" => ~IsVoterMajority(fetchedSinceCheck[i] \cup {i})

(***************************************************************************)
(*                           ACTION PROPERTY                               *)
(* Revision §"Leader Progress Timeout", the other half of the rule: a      *)
(* leader's own progress timer never deposes it while Fetch requests from  *)
(* a majority reached it in the window.  (A leader becomes a Candidate     *)
(* without consuming a message only through LeaderProgressExpired.)        *)
(***************************************************************************)
ProgressTimerSparesHeardLeader ==
    [][\A i \in Server :
          (/\ role[i] = "Leader"
           /\ IsVoterMajority(progressWindow[i] \cup {i})
           /\ role'[i] = "Candidate"
           /\ msgs' = msgs) => FALSE]_progressVars

(***************************************************************************)
(*                              LIVENESS                                   *)
(* The progress timer of a leader eventually expires (weak fairness on its *)
(* expiry, either outcome), on top of KRaft.tla's Fairness.  A zombie      *)
(* leader — one that does not hear from a majority, e.g. partitioned from  *)
(* it — eventually stops being leader (revision §"Leader Progress          *)
(* Timeout": otherwise it would "become a pure 'zombie leader'").  A       *)
(* leader of MaxEpoch is exempt: the bound forbids the election it would   *)
(* start.                                                                  *)
(***************************************************************************)
ProgressFairness ==
    \A i \in Voters :
        WF_progressVars(LeaderProgressExpired(i) \/ LeaderProgressCheckPassed(i))

ProgressLiveSpec == ProgressSpec /\ Fairness /\ ProgressFairness

\* The zombie leader's own view: weak fairness on nothing but the progress
\* timers of the voters that may time out.  No message is ever delivered
\* fairly, so the network may cut the leader off from any set of voters
\* (a partition) or deliver only some Fetch requests.  A property that holds
\* under ZombieLiveSpec holds under ProgressLiveSpec too (more fairness,
\* fewer behaviours).  Its fairness names only TimeoutVoters, so a symmetry
\* that permutes the other voters maps it to itself (MCKRaftProgress.tla).
ZombieFairness ==
    \A i \in TimeoutVoters :
        WF_progressVars(LeaderProgressExpired(i) \/ LeaderProgressCheckPassed(i))

ZombieLiveSpec == ProgressSpec /\ ZombieFairness

LeaderBelowMaxEpoch(i) == role[i] = "Leader" /\ currentEpoch[i] < MaxEpoch
NotLeaderOrHeardFromMajority(i) ==
    role[i] # "Leader" \/ IsVoterMajority(progressWindow[i] \cup {i})

ZombieLeaderStepsDown ==
    \A i \in TimeoutVoters : LeaderBelowMaxEpoch(i) ~> NotLeaderOrHeardFromMajority(i)

=============================================================================
