"""Commands as transactions: the change set of an overlay upper layer
(kernel.transaction.upper), applying it to the workspace all or nothing
(kernel.transaction.apply) and undoing applied steps (kernel.transaction.checkpoints)."""
