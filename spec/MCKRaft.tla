-------------------------------- MODULE MCKRaft --------------------------------
(***************************************************************************)
(* Model-checking wrapper for KRaft.tla: definitions that TLC              *)
(* configurations (tlc_configs/kraft-*.cfg) refer to and that do not       *)
(* belong in the protocol module: the clusterId assignment of the replicas *)
(* and the symmetry sets.  No state constraint is needed: every bound is a *)
(* guard in KRaft.tla.                                                     *)
(***************************************************************************)
EXTENDS KRaft

\* Replicas configured with another cluster's clusterId ("cluster-B"); all
\* others have "cluster-A".  Empty in every configuration but kraft-ci-clusterid
\* and the cluster-id bug configuration.
CONSTANT MisconfiguredServers

MCClusterOf == [i \in Server |-> IF i \in MisconfiguredServers
                                  THEN "cluster-B" ELSE "cluster-A"]

(***************************************************************************)
(* Symmetry: replicas with the same role and clusterId are interchangeable,*)
(* and so are the client values.  The permutations are the product of the  *)
(* three permutation groups (not their union), so that TLC identifies all  *)
(* symmetric states.  Never used with liveness checking.                   *)
(***************************************************************************)
Symmetry ==
    {p @@ q @@ r : p \in Permutations(Voters \ MisconfiguredServers),
                   q \in Permutations(Observers \ MisconfiguredServers),
                   r \in Permutations(Values)}

\* Symmetry on the servers only (for configurations with one client value).
ServerSymmetry ==
    {p @@ q : p \in Permutations(Voters \ MisconfiguredServers),
              q \in Permutations(Observers \ MisconfiguredServers)}

\* Symmetry for configurations whose TimeoutVoters is a proper subset of the
\* voters: replicas are interchangeable only within their class (timer
\* voters, other voters, observers; misconfigured servers are fixed).
TimerClassSymmetry ==
    {p @@ q @@ r :
        p \in Permutations(TimeoutVoters \ MisconfiguredServers),
        q \in Permutations((Voters \ TimeoutVoters) \ MisconfiguredServers),
        r \in Permutations(Observers \ MisconfiguredServers)}

(***************************************************************************)
(* State constraint for the 3-voter configuration with two messages in     *)
(* flight: at most one Fetch request or response at a time, so that the   *)
(* second slot serves elections, resignation (EndQuorumEpoch), loss,       *)
(* duplication and reordering of the other messages.  A bound: it only     *)
(* removes behaviours.                                                     *)
(***************************************************************************)
AtMostOneFetchInFlight ==
    LET fetches == {m \in BagToSet(msgs) : m.type \in {"FetchRequest", "FetchResponse"}}
    IN  /\ Cardinality(fetches) <= 1
        /\ \A m \in fetches : CopiesIn(m, msgs) <= 1

(***************************************************************************)
(* State constraint for the exhaustive 3-voter ci configuration with two   *)
(* messages in flight: at most one Candidate at a time (the randomised     *)
(* election back-off of KIP-595 §"Vote" makes simultaneous candidacies     *)
(* rare; split votes are checked with one message in flight by             *)
(* kraft-ci-3voters, kraft-ci-restart and kraft-ci-history).  Vote requests*)
(* of an earlier candidacy may still be in flight, duplicated or           *)
(* reordered.  A bound: it only removes behaviours.                        *)
(***************************************************************************)
AtMostOneCandidate ==
    Cardinality({i \in Server : role[i] = "Candidate"}) <= 1

(***************************************************************************)
(* State constraint of kraft-bug-no-current-epoch-rule (issue 34): the     *)
(* voters whose timers fire never follow -- they vote, stand and lead, and *)
(* only the other voters fetch (KIP-595 §"Fetch"), as in the Raft Figure 8 *)
(* story.  A bound: it only removes behaviours.  Symmetric within          *)
(* TimeoutVoters.                                                          *)
(***************************************************************************)
TimeoutVotersNeverFollow ==
    \A i \in TimeoutVoters : role[i] # "Follower"

(***************************************************************************)
(* State constraint for the exhaustive 3-voter ci configuration with two   *)
(* messages in flight (issue 34, the ci budget): the second message slot   *)
(* serves only a leader's resignation (KIP-595 §"EndQuorumEpoch" sends one *)
(* request to each other voter at once): a second message is in flight     *)
(* only while an EndQuorumEpoch request is (its loss, duplication and      *)
(* reordering, and the successors' elections, included).  As              *)
(* MCKRaftReassign's.  Two arbitrary messages in flight with 3 voters are  *)
(* checked by kraft-deep-3voters-two-in-flight; with 2 voters and an       *)
(* observer by kraft-ci-lossy.  A bound: it only removes behaviours.       *)
(***************************************************************************)
SecondSlotForEndQuorumEpoch ==
    \/ NumInFlight <= 1
    \/ \E m \in BagToSet(msgs) : m.type = "EndQuorumEpochRequest"

(***************************************************************************)
(* State constraint for kraft-ci-kafka-truncation-keeps-unknown-epoch (4   *)
(* epochs, 3 voters): a voter whose timer never fires (not in              *)
(* TimeoutVoters) only votes and holds no record, as if its Fetch traffic  *)
(* were always lost.  The two other voters then need its vote for every    *)
(* election, which is what lets a leader miss the epochs of the other one  *)
(* (the DivergingEpoch of KafkaTruncationKeepsUnknownEpoch).  A bound: it  *)
(* only removes behaviours.                                                *)
(***************************************************************************)
VotingOnlyVotersHoldNoRecords ==
    \A v \in Voters \ TimeoutVoters : log[v] = << >>

\* The same configuration: client records only in epoch 1 (later leaders
\* append their LeaderChange record only).  A bound.
ClientRecordsOnlyInFirstEpoch ==
    \A i \in Server : \A k \in 1..Len(log[i]) :
        log[i][k].value = LeaderChange \/ log[i][k].epoch = 1

(***************************************************************************)
(* VIEW for the exhaustive 3-voter configuration with two messages in      *)
(* flight (kraft-ci-3voters-two-in-flight).  It leaves out the high        *)
(* watermarks, KRaft.tla's eager progress window and restartCount:         *)
(*  - no guard reads a high watermark; it only feeds the HWM fields of     *)
(*    FetchResponses, other high watermarks and the ghost history, and     *)
(*    ghostCommitted's update does not depend on it either (a leader's HWM *)
(*    never exceeds Len(ghostCommitted), and RecordCommitted extends the   *)
(*    history only beyond its length);                                     *)
(*  - with 3 voters fetchedSinceCheck is always {} (one fetcher and the    *)
(*    leader are a majority), and its guard is always TRUE anyway          *)
(*    (EagerWindowNeverAMajority, KRaftProgress.tla);                      *)
(*  - restartCount is 0 with MaxRestarts = 0.                              *)
(* So states equal in the view have the same enabled actions and equal     *)
(* successors up to those variables: an invariant or property that does    *)
(* not mention them is checked exactly.  The ones that do (HWM within the  *)
(* log, the committed prefix below a replica's HWM, HighWatermarkMonotonic)*)
(* are checked by the configurations without a VIEW.                       *)
(***************************************************************************)
NetworkView ==
    <<currentEpoch, votedId, leaderId, log, role, votesGranted, votesRejected,
      followerEndOffset, msgs, ghostCommitted, ghostVotes>>

\* NoCommittedRecordLost's first half, which does not read high watermarks:
\* every committed record is still held, at its offset, by a majority of
\* the voters.
CommittedRecordsOnMajority ==
    \A k \in 1..Len(ghostCommitted) :
        IsVoterMajority({v \in Voters : /\ k <= Len(log[v])
                                        /\ log[v][k] = ghostCommitted[k].entry})

(***************************************************************************)
(* Reachability witnesses: each is an invariant that a ci configuration    *)
(* EXPECTS to be violated, so that a bound which silently made a behaviour *)
(* unreachable fails the suite (a model-checking run proves reachability   *)
(* only by finding the state).                                             *)
(***************************************************************************)
\* KIP-595 §"EndQuorumEpoch": a leader resigns and its EndQuorumEpoch
\* requests are in flight (any message in flight may be delivered next, so
\* §"EndQuorumEpoch Request Handling" is reachable too).
NoEndQuorumEpochSent ==
    \A m \in BagToSet(msgs) : m.type # "EndQuorumEpochRequest"

\* KafkaObserverLogNotFlushed (docs/kafka-conformance.md F13): a restart of
\* an observer loses records of its log.  An action property: a Restart step
\* (restartCount grows, one replica changes) that shortens an observer's log.
ObserverLogSurvivesRestart ==
    [][\A i \in Observers :
          restartCount' = restartCount + 1 => Len(log'[i]) >= Len(log[i])]_vars

\* KafkaTruncationKeepsUnknownEpoch (docs/kafka-conformance.md F14): a
\* FetchResponse in flight carries a DivergingEpoch whose epoch its follower
\* lacks and which Kafka's truncateToEndOffset and KIP-595's truncation
\* (§"FetchResponse Handling" step 2) would cut at different offsets; the
\* follower is at the response's position, so the next step may take it.
NoTruncationKeepsUnknownEpoch ==
    \A m \in BagToSet(msgs) :
        LET i == m.dest
        IN  (/\ m.type = "FetchResponse"
             /\ m.error \in {"NONE", "NOT_FOLLOWER"}
             /\ m.divergingEpoch # NoDivergence
             /\ role[i] = "Follower" /\ m.src = leaderId[i]
             /\ m.epoch = currentEpoch[i]
             /\ m.fetchOffset = Len(log[i]) /\ m.lastFetchedEpoch = LastEpoch(log[i]))
            => TruncateToEndOffset(log[i], m.divergingEpoch)
                   = TruncateToDivergence(log[i], m.divergingEpoch)

=============
