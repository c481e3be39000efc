module github.com/agentstream/agentstream/benches/latency/go

go 1.21

require github.com/agentstream/agentstream/bindings/go v0.0.0

replace github.com/agentstream/agentstream/bindings/go => ../../../bindings/go
