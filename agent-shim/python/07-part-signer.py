class PartSigner(object):
    """Signed PUTs for the parts of `missing` (numbers, in that order) of an upload declared
    without its hashes, got ahead of need (the Node shim's PartSigner): parts are hashed in order
    on a thread of their own, up to `ahead` past the last one asked for, and their digests signed
    in batches (POST /v1/uploads/:id/parts), so that a part's URL is usually there before a PUT
    slot frees up for it. A part hashed goes for signing at once when no batch is on its way (or
    when a PUT waits on it, or `ahead` wait); else with the next batch, once the last is back.
    (Node's waits for `ahead` digests: with the Python shim's one connection per relay request,
    a batch sent only then was often still on its way when the PUTs came to it.) `parts` (FirstByteParts) holds the digests and signs; parts the declare
    signed already are in `known` (number: put), used (and taken out) when their digest is held."""

    def __init__(self, parts, missing, ahead, known):
        self.parts, self.missing, self.ahead = parts, missing, ahead
        self.cond = threading.Condition()
        self.slots = [Future() for _ in missing]
        self.pending = []  # indexes of `missing` hashed, not yet sent for signing
        self.asked = 0  # how many of `missing` have been asked for; the hashing stays `ahead`
        self.hashed = 0
        self.stopped = False
        self.signing = 0  # batches on their way
        digests = parts.digests
        while self.hashed < len(missing):
            number = missing[self.hashed]
            if number not in known or digests[number - 1] is None:
                break
            self.slots[self.hashed].set_result(known.pop(number))  # signed once: not again
            self.hashed += 1
        self.thread = threading.Thread(target=self.run)
        self.thread.daemon = True
        self.thread.start()

    def put_for(self, index):
        """The signed PUT of missing[index], once it is there; asking moves the hashing on."""
        with self.cond:
            self.asked = max(self.asked, index + 1)
            self.cond.notify_all()
            batch = self.take() if index in self.pending else None
        self.sign(batch)
        return self.slots[index].result()

    def stop(self):
        """Stops hashing ahead (the upload ended, or failed)."""
        with self.cond:
            self.stopped = True
            self.cond.notify_all()

    def run(self):
        try:
            while True:
                with self.cond:
                    while not self.stopped and self.asked + self.ahead <= self.hashed < len(self.missing):
                        self.cond.wait()
                    if self.stopped or self.hashed >= len(self.missing):
                        batch = None if self.stopped else self.take()
                        break
                    index = self.hashed
                self.parts.digest(self.missing[index])
                with self.cond:
                    self.hashed += 1
                    self.pending.append(index)
                    waited_on = index < self.asked
                    full = waited_on or len(self.pending) >= self.ahead or not self.signing
                    batch = self.take() if full else None
                self.sign(batch)
            self.sign(batch)
        except BaseException as err:
            self.fail(err)

    def take(self):
        """The pending indexes, now on their way to be signed (hold self.cond)."""
        batch, self.pending = self.pending, []
        if batch:
            self.signing += 1
        return batch

    def sign(self, batch):
        """Sends the digests of `batch` for signing in one request, on a thread of its own."""
        if batch:
            thread = threading.Thread(target=self.signed, args=(batch,))
            thread.daemon = True
            thread.start()

    def signed(self, batch):
        numbers = [self.missing[i] for i in batch]
        try:
            puts = self.parts.sign(numbers)
        except BaseException as err:
            for i in batch:
                self.slots[i].set_exception(err)
            puts = None
        else:
            for i, number in zip(batch, numbers):
                self.slots[i].set_result(puts[number])
        with self.cond:
            self.signing -= 1
            after = self.take() if puts is not None and not self.signing and not self.stopped else None
        self.sign(after)

    def fail(self, err):
        with self.cond:
            failed = list(range(self.hashed, len(self.slots))) + self.take()
        for i in failed:
            if not self.slots[i].done():
                self.slots[i].set_exception(err)
