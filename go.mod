module github.com/glassbox-ai/glassbox

go 1.26
