class PartPace(object):
    """How many parts of a multipart upload stream at once (the Node shim's eachPart): `most`
    await their answers at most. Adaptive (AIRLOCK_UPLOAD_CONCURRENCY unset): one part's bytes go
    at a time, the next part starting once they are all written out (`sent`), while the store
    still checks and answers the last, so the parts follow each other as one stream would; all
    `most` stream at once only when the bytes so far show that pays (`SplitProbe`, the ranged
    downloads' rule). Otherwise `most` stream at once from the start."""

    def __init__(self, most, adaptive, remaining):
        self.cond = threading.Condition()
        self.most = most
        self.streams = 1 if adaptive and most > 1 else most
        self.streaming = 0
        self.unanswered = 0
        self.probe = SplitProbe(remaining, self.decided) if self.streams < most else None

    def decided(self, pays):
        if pays:
            with self.cond:
                self.streams = self.most
                self.cond.notify_all()

    def room(self):
        return self.streaming < self.streams and self.unanswered < self.most

    def launch(self):
        """A part starts: its stream (hold self.cond)."""
        self.streaming += 1
        self.unanswered += 1
        return PartStream(self)

    def sent(self, stream):
        with self.cond:
            self.ended(stream)
            self.cond.notify_all()

    def answered(self, stream):
        """A part ended, answered or failed; one whose bytes never all went ends its stream."""
        with self.cond:
            self.unanswered -= 1
            self.ended(stream)
            self.cond.notify_all()

    def ended(self, stream):
        """The part's bytes stop streaming, once (hold self.cond)."""
        if stream.going:
            stream.going = False
            self.streaming -= 1


class PartStream(object):
    """One part's PUT as its pace sees it: `moved` as its bytes go, `sent` once they all have."""

    def __init__(self, pace):
        self.pace = pace
        self.going = True

    def moved(self, length):
        if self.pace.probe is not None:
            self.pace.probe.heard(length)

    def sent(self):
        self.pace.sent(self)


def each_part(concurrency, parts, send, stop, adaptive=False, remaining=0):
    """Runs send(part, stream) for each part, in order, paced by PartPace (`remaining`: the bytes
    of all of them), summing what each returns; the first to fail for good sets `stop` (the
    others end early) and its error ends the upload."""
    failure = []
    done = [0]
    if not parts:
        return 0
    most = min(concurrency, len(parts))
    pace = PartPace(most, adaptive, remaining)

    def one(part, stream):
        try:
            if not stop.is_set():
                sent = send(part, stream)
                with pace.cond:
                    done[0] += sent
        except BaseException as err:
            with pace.cond:
                if not stop.is_set():
                    failure.append(err)
                    stop.set()
        finally:
            pace.answered(stream)

    with ThreadPoolExecutor(max_workers=most) as pool:
        for part in parts:
            with pace.cond:
                while not stop.is_set() and not pace.room():
                    pace.cond.wait()
                if stop.is_set():
                    break
                stream = pace.launch()
            pool.submit(one, part, stream)
    if failure:
        raise failure[0]
    return done[0]
