NAME = 'b'
