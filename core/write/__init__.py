"""Writing Paimon metadata: Avro manifests and lists, and atomic snapshot/tag commits."""
