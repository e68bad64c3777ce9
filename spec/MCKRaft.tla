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

=============
