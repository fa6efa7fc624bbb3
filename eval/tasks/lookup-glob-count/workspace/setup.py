# not under src
