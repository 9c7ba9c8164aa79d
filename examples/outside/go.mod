module example.com/myplugin

go 1.26.8

require github.com/llmgw/gateway/sdk-guest v0.0.0-00010101000000-000000000000

replace github.com/llmgw/gateway/sdk-guest => ../../sdk-guest
