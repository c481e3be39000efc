module github.com/agentstream/agentstream/bindings/go

go 1.21
