---------------------------- MODULE MCKRaftReassign ----------------------------
(***************************************************************************)
(* Model-checking wrapper for KRaftReassign.tla: the clusterId of the      *)
(* replicas (one cluster) and the symmetry set of the configurations       *)
(* tlc_configs/reassign-*.cfg.  Bounds are CONSTANTS of the spec (guards). *)
(***************************************************************************)
EXTENDS KRaftReassign

MCClusterOf == [i \in Server |-> "cluster-A"]

(***************************************************************************)
(* Symmetry for a configuration with a single target set T and every      *)
(* replica's timer enabled: replicas are interchangeable within the four  *)
(* classes bootstrap voter / observer x in T / not in T, and so are the   *)
(* client values.  (Admin and Nil are fixed.)  Never used with liveness.  *)
(***************************************************************************)
TargetSymmetry ==
    IF Cardinality(TargetSets) = 1 /\ TimeoutVoters = Server
    THEN LET T == CHOOSE t \in TargetSets : TRUE
         IN  {p @@ q @@ r @@ s @@ w :
                 p \in Permutations(Voters \cap T),
                 q \in Permutations(Voters \ T),
                 r \in Permutations(Observers \cap T),
                 s \in Permutations(Observers \ T),
                 w \in Permutations(Values)}
    ELSE Assert(FALSE, "TargetSymmetry needs one target set and TimeoutVoters = Server")

=============================================================================
