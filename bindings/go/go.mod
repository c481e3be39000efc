module example.invalid/agentstream/bindings/go

go 1.21
