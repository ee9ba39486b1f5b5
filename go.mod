module github.com/glassbox-ai/glassbox

go 1.26.0

require github.com/ardanlabs/jinja v1.8.0
