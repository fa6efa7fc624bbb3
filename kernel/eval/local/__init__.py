"""`reins eval --local`: a real small model on this machine (llama.cpp's llama-server and an
instruct GGUF from a PyPI package), served on loopback for the length of an eval."""
