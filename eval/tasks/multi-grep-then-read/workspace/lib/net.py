def fetch(url):
    # TODO: add a retry with backoff
    return url
