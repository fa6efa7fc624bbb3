sleep 30
echo done
