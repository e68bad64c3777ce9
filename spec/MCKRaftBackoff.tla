----------------------------- MODULE MCKRaftBackoff -----------------------------
(***************************************************************************)
(* Model-checking wrapper for KRaftBackoff.tla: MCKRaft.tla's clusterId    *)
(* assignment.  No symmetry: every configuration checks liveness.          *)
(***************************************************************************)
EXTENDS KRaftBackoff, MCKRaft

=============================================================================
