------------------------------ MODULE MCKRaftHistory ------------------------------
(***************************************************************************)
(* Model-checking wrapper for KRaftHistory.tla: the same clusterId         *)
(* assignment and symmetry sets as MCKRaft.tla (the ghost map is a         *)
(* function of epochs to sets of servers, so server permutations apply).   *)
(***************************************************************************)
EXTENDS KRaftHistory, MCKRaft

\* The ghost map's values are sets of servers, so permuting servers maps
\* reachable states to reachable states: MCKRaft's server symmetry applies.
HistoryServerSymmetry == ServerSymmetry

=============================================================================
