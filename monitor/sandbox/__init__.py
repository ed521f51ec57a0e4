"""The sandbox cluster: an in-memory, RocketMQ-wire-compatible name server and brokers for tests and the demo.

Test and demo infrastructure only, never a production broker: nothing is persisted, there is no replication
protocol, and it exists so the real C++ client and the project's admin client have a cluster to talk to where
no RocketMQ server can be installed. It is built on the same codec and body types as the wire client."""
