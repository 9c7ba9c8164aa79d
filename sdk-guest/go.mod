module github.com/llmgw/gateway/sdk-guest

go 1.26.8
