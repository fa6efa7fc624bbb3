NAME = 'a'
