NAME = 'l'
