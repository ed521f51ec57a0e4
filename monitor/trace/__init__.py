"""RocketMQ's message trace: the records tracing clients write to the trace topic (records), one message's records
put in order (timeline), and reading them from a cluster (reader). Pure Python over monitor.remoting and
monitor.messages.search; docs/trace.md explains what a trace is and how to switch it on."""
