"""The names of the KIP-966 planted bugs (registered in refimpl/bugs.py with protocol "elr")."""

ELR_NOT_CLEARED = "elr-not-cleared-at-min-isr"
UNCLEAN_KEPT_IN_ELR = "unclean-broker-kept-in-elr"
LEADER_FROM_FENCED_ELR = "leader-from-fenced-elr"
ACK_BELOW_MIN_ISR = "ack-below-min-isr"
HWM_ON_MAXIMAL_ISR = "hwm-on-maximal-isr"
BALANCED_FIXED_REPLIES = "balanced-fixed-replies"
LAST_KNOWN_ELR_LITERAL = "last-known-elr-literal"

ALL = (ELR_NOT_CLEARED, UNCLEAN_KEPT_IN_ELR, LEADER_FROM_FENCED_ELR, ACK_BELOW_MIN_ISR,
       HWM_ON_MAXIMAL_ISR, BALANCED_FIXED_REPLIES, LAST_KNOWN_ELR_LITERAL)
