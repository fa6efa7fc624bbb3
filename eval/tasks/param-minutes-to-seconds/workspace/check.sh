echo "all checks passed"
