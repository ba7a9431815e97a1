module github.com/spotcheck/spotcheck/examples

go 1.26.0

replace github.com/spotcheck/spotcheck => ../
