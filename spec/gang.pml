/* gang.pml: a Promela model of the elastic gang protocol specified in the
 * header comment of src/gang/gang.h (doc/ARCHITECTURE.md "The elastic
 * gang protocol"). spin checks it exhaustively; tests/verify.sh runs
 * every property, spec/README.md maps the properties to the invariants
 * I1..I6.
 *
 * Processes: the leader (slot 0), three workers (slots 1..3) and a
 * requester that sets and clears the workers' requested bits at any time
 * and may stop at any time (so a stuck system becomes a terminal state,
 * which the deadlock check reports). The leader runs NGEN generations (gang_begin .. gang_end), of
 * NTOK1 tokens then NTOK2 tokens; a token has NW waves of NCH chunks each,
 * dealt to the participants as shares, each claimed from its front by its
 * owner and from its back by the others (gang.c claim()). After the last
 * gang_end the leader sets
 * `shutdown` (gang_free) and joins the workers.
 *
 * One atomic block is one atomic instruction of the C code (load, store,
 * CAS, fetch_add), except the folds marked FOLD: each joins steps that no
 * other process can tell apart from one step (it reads nothing they write
 * in between, or the read's result cannot change). Memory is sequentially
 * consistent: the model checks the protocol's logic, not the C11 orders.
 *
 * Property switches (one spin run each):
 *   (none)       no invalid end state: every process terminates;
 *   -DP_BARRIER  at each barrier release: arrivals == popcount(mask), the
 *                arrivers are exactly the mask, every chunk was written once;
 *   -DP_MEMBER   each claim, chunk write and arrival is by a slot in the
 *                current latch, for the current tag and wave;
 *   -DLTL_JOIN   the ghost state of I4 and the LTL claims join_bound (I4,
 *                safety: pan -N join_bound) and join_live (no slot waits
 *                to join forever: pan -a -f -N join_live);
 *   -DLTL_FINISH ltl finish: every fair run ends (pan -a -f -N finish).
 * Mutations, each of which spin must catch:
 *   -DMUT_LEAVE_STORE  the worker leaves with a plain store ack = 0;
 *   -DMUT_LEADER_NOCAS the leader loads ack, then stores e|TAKEN;
 *   -DMUT_ACK_FIRST    the worker acks before it reads the latch;
 *   -DMUT_IGNORE_MASK  the worker may take part in a latch without its bit;
 *   -DMUT_NO_CLEAR     the worker never clears ACK_TAKEN;
 *   -DMUT_LEADER_WAITS the leader waits for a requested slot's ack;
 *   -DMUT_STEAL_SPLIT  a thief loads a share's end, then stores end - 1
 *                      (no CAS);
 *   -DSPEC_LITERAL     the leave path exactly as gang.h words it: a flaw
 *                      (see `taken:` in the worker and spec/README.md).
 */

#ifndef NTOK1
#define NTOK1 2         /* tokens in the first generation */
#endif
#ifndef NTOK2
#define NTOK2 1         /* tokens in each later generation */
#endif
#ifndef NGEN
#define NGEN 2          /* generations */
#endif
#ifndef NW
#define NW 2            /* waves per token */
#endif
#ifndef NCH
#define NCH 2           /* chunks per wave */
#endif
#define NWRK 3          /* workers: slots 1..3; the leader is slot 0 */
#define TAKEN 16        /* ACK_TAKEN; epochs stay below it */
#define BIT(s) (1 << (s))
#define ALLCH ((1 << NCH) - 1)

#ifdef P_BARRIER
#define ASSERT_BARRIER(x) assert(x)
#else
#define ASSERT_BARRIER(x) skip
#endif
#ifdef P_MEMBER
#define ASSERT_MEMBER(x) assert(x)
#else
#define ASSERT_MEMBER(x) skip
#endif

/* ---- shared state (gang.h "Shared state") ---- */
byte req = 1;           /* requested; bit 0 (the leader) always set */
byte epoch = 0;         /* odd while a generation runs */
byte ack[NWRK + 1];     /* 0, e, or e|TAKEN */
byte ltag = 0;          /* latch: tag ...                                */
byte lmask = 1;         /*        ... | participant mask (one word)      */
byte stag = 0;          /* sync:  tag ...                                */
byte swave = NW;        /*        ... | wave ...                         */
byte scnt = 0;          /*        ... | arrivals (one word)              */
byte lo[NWRK + 1];      /* slot s's share of the wave's chunks: lo[s] .. */
byte hi[NWRK + 1];      /* hi[s] - 1, one word in the C code (RANGE)     */
bool shutdown = false;  /* gang_free: stop */
byte nexit = 0;         /* workers that have stopped (joined) */
bool finished = false;  /* the leader has joined every worker */

/* ---- ghost state: observation only ---- */
byte arrivers = 0;      /* slots counted at the current barrier */
byte done = 0;          /* chunks written in the current wave */

/* I4, precisely. pend bit s: s stored ack = e while requested, in the
 * current epoch e, and has stayed requested since (cleared when the
 * requester clears s, and at gang_end). atag[s]: ltok at that ack, ltok
 * being the tag of the last token whose step 1 has begun; the ack came
 * before step 1 of token t began iff atag[s] < t. I4 (and staying in):
 * while s is pending, every latch t > atag[s] has s's bit; once s is in a
 * latch atag[s] = 0, so from then on every latch must have it.
 * jw bit s (waiting to join): pend, and no latch has had s's bit since. */
#ifdef LTL_JOIN
byte ltok = 0;
byte pend = 0;
byte jw = 0;
byte atag[NWRK + 1];
#define G_ACK(s) if :: (req & BIT(s)) && e == epoch -> pend = pend | BIT(s); jw = jw | BIT(s); atag[s] = ltok :: else fi
#define G_STEP1(t) ltok = t
/* a slot that is not waiting to join has atag 0: no stale tags in states */
#define G_CANON jw = jw & pend; atag[1] = ((jw & 2) -> atag[1] : 0); atag[2] = ((jw & 4) -> atag[2] : 0); atag[3] = ((jw & 8) -> atag[3] : 0)
#define G_PUBLISH(m) jw = jw & ~(m); G_CANON
#define G_END pend = 0; G_CANON
#define G_REQ pend = pend & req; G_CANON
#define LATE(s) ((pend & BIT(s)) && ltag > atag[s] && !(lmask & BIT(s)))
#else
#define G_ACK(s) skip
#define G_STEP1(t) skip
#define G_PUBLISH(m) skip
#define G_END skip
#define G_REQ skip
#endif

#ifdef LTL_FINISH
/* every fair run ends: the leader finishes and joins the workers */
ltl finish { <> finished }
#endif
#ifdef LTL_JOIN
ltl join_bound { [] !(LATE(1) || LATE(2) || LATE(3)) }
/* a slot waiting to join does not wait forever: it joins, or it is no
 * longer requested, or the generation ends (with weak fairness) */
ltl join_live { [] (((jw & 2) -> <> !(jw & 2)) &&
                    ((jw & 4) -> <> !(jw & 4)) &&
                    ((jw & 8) -> <> !(jw & 8))) }
#endif

#define POPCOUNT(m) (((m) & 1) + (((m) >> 1) & 1) + (((m) >> 2) & 1) + (((m) >> 3) & 1))

/* deal(): slot s of mask m, the r-th, gets chunks [r NCH / P, (r+1) NCH / P)
 * of the next wave; slots outside m get an empty share (in the C code they
 * keep a stale one, which no participant of m reads: a canonical form) */
#define RANK(m, s) POPCOUNT((m) & (BIT(s) - 1))
#define DEAL1(m, s) lo[s] = (((m) & BIT(s)) -> RANK(m, s) * NCH / POPCOUNT(m) : 0); \
                    hi[s] = (((m) & BIT(s)) -> (RANK(m, s) + 1) * NCH / POPCOUNT(m) : 0)
#define DEAL(m) DEAL1(m, 0); DEAL1(m, 1); DEAL1(m, 2); DEAL1(m, 3)
#define EMPTY0 lo[0] = 0; hi[0] = 0; lo[1] = 0; hi[1] = 0; lo[2] = 0; hi[2] = 0; lo[3] = 0; hi[3] = 0
/* every share of m is empty */
#define DRAINED1(m, v) (!((m) & BIT(v)) || lo[v] >= hi[v])
#define DRAINED(m) (DRAINED1(m, 0) && DRAINED1(m, 1) && DRAINED1(m, 2) && DRAINED1(m, 3))

/* take the last chunk of participant v's share (a CAS on its word). FOLD:
 * with that chunk's writes (ghost `done`) */
#ifdef MUT_STEAL_SPLIT
/* broken: the thief loads the share's end, then stores end - 1 (no CAS):
 * the owner or another thief can claim the same chunk in between */
#define STEAL(s, t, m, v) \
	atomic { (m & BIT(v)) && v != s && lo[v] < hi[v] -> k = hi[v] }; \
	atomic { \
		ASSERT_MEMBER(!(done & BIT(k - 1))); \
		hi[v] = k - 1; \
		done = done | BIT(k - 1); \
		k = 0 \
	}
#else
#define STEAL(s, t, m, v) \
	atomic { \
		(m & BIT(v)) && v != s && lo[v] < hi[v] -> \
		ASSERT_MEMBER((lmask & BIT(s)) && ltag == t && stag == t && \
		              swave == w && !(done & BIT(hi[v] - 1))); \
		hi[v]--; \
		done = done | BIT(hi[v]) \
	}
#endif

/* ---- a participant's part of token t, mask m, n = popcount(m) ---- */
inline participate(s, t, m, n) {
	do
	:: do
		:: atomic {     /* claim the front of the own share (a CAS on
				 * its word), FOLD: with that chunk's writes */
			lo[s] < hi[s] ->
			ASSERT_MEMBER((lmask & BIT(s)) && ltag == t &&
			              stag == t && swave == w && !(done & BIT(lo[s])));
			done = done | BIT(lo[s]);
			lo[s]++
		   }
		/* or the back of another participant's share (any order: the
		 * C code's own-first, next-slot-up order is one of them) */
		:: STEAL(s, t, m, 0)
		:: STEAL(s, t, m, 1)
		:: STEAL(s, t, m, 2)
		:: STEAL(s, t, m, 3)
		:: atomic {     /* FOLD: the loads that find every share of m
				 * empty (a share seen empty stays empty until
				 * this slot arrives: claims only shrink it, and
				 * only the wave's last arriver deals again) and
				 * the arrival, CAS sync (t,w,k) -> (t,w,k+1) */
			DRAINED(m) ->
			ASSERT_MEMBER((lmask & BIT(s)) && ltag == t && stag == t &&
			              swave == w && !(arrivers & BIT(s)));
			(stag == t && swave == w);      /* else the CAS never succeeds */
			arrivers = arrivers | BIT(s);
			scnt++;
			if
			:: scnt == n ->
				/* the last arriver: finish(), the next wave's
				 * deal and the release store sync = (t, w+1, 0).
				 * FOLD: everyone else in the token is waiting on
				 * sync, which reads (t, w, *) until the release.
				 * After the last wave the shares are left empty
				 * (canonical: the leader deals before the next
				 * latch) */
				ASSERT_BARRIER(arrivers == m && m == lmask && ltag == t);
				ASSERT_BARRIER(done == ALLCH);  /* finish() after every chunk */
				done = 0;
				arrivers = 0;
				if
				:: w + 1 < NW -> DEAL(m)
				:: else -> EMPTY0
				fi;
				swave = w + 1;
				scnt = 0
			:: else
			fi
		   };
		   break
		od;
		/* wait until sync no longer reads (t, w, *); after the last
		 * wave the token is over for this slot */
		atomic {
			!(stag == t && swave == w) ->
			w++;
			if
			:: w == NW -> w = 0; t = 0; m = 0; n = 0; break
			:: else
			fi
		}
	od
}

/* step 1 for one slot: if s is requested, CAS ack[s] e -> e|TAKEN.
 * FOLD: the read of `requested` joins the CAS; the requester may flip the
 * bit at any time, so a stale read is a flip the model also explores. */
#if defined(MUT_LEADER_WAITS)
inline take(s) {
	/* broken: waits for a requested slot's ack (a named core) */
	atomic { if :: (req & BIT(s)) -> ack[s] == epoch; ack[s] = epoch | TAKEN; m = m | BIT(s) :: else fi }
}
#elif defined(MUT_LEADER_NOCAS)
inline take(s) {
	/* broken: load and test, then a plain store */
	atomic { if :: (req & BIT(s)) && ack[s] == epoch -> k = 1 :: else -> k = 0 fi };
	atomic { if :: k -> ack[s] = epoch | TAKEN; m = m | BIT(s) :: else fi; k = 0 }
}
#else
inline take(s) {
	atomic {
		if
		:: (req & BIT(s)) && ack[s] == epoch -> ack[s] = epoch | TAKEN; m = m | BIT(s)
		:: else
		fi
	}
}
#endif

active proctype Leader() {
	byte t, m, w, k, n, g, i;
	do
	:: g == NGEN -> break
	:: else ->
		epoch++;        /* gang_begin: odd; wakes the workers */
		do
		:: (g == 0 && i == NTOK1) || (g > 0 && i == NTOK2) -> i = 0; break
		:: else ->
			/* step 1: mask = {leader} + the requested slots whose
			 * ack CAS succeeds; never waits */
			atomic { i++; t = ltag + 1; m = 1; G_STEP1(t) };
			take(1);
			take(2);
			take(3);
			/* step 2: sync = (t,0,0), the first wave's deal, then
			 * the latch store. FOLD: nobody reads sync or a share
			 * before it has read this latch, except a slot still
			 * waiting for the last release of token t-1, which
			 * already reads "released". */
			atomic {
				stag = t; swave = 0; scnt = 0; DEAL(m);
				ltag = t;
				lmask = m;
				n = POPCOUNT(m);
				G_PUBLISH(m)
			};
			/* step 3: take part; the token ends when sync reads
			 * (t, NW, 0), which the last wave's wait has seen */
			participate(0, t, m, n)
		od;
		atomic { epoch++; G_END; g++ }  /* gang_end: even */
	od;
	shutdown = true;        /* gang_free: stop the workers ... */
	nexit == NWRK;          /* ... and join them */
	finished = true
}

proctype Worker(byte s) {
	byte e, seen, t, m, w, n;
#ifdef MUT_STEAL_SPLIT
	byte k;
#endif
sleep:
	/* futex sleep while not requested or the epoch is even */
	if
	:: shutdown -> goto fin
#ifdef MUT_ACK_FIRST
	:: atomic { (req & BIT(s)) && (epoch & 1) -> e = epoch }
	fi;
	/* broken: acks, then reads the latch */
	atomic { ack[s] = e; G_ACK(s) };
	seen = ltag;
#else
	/* wake, then arrive: read the latch (seen). FOLD: the latch read
	 * joins the wake: a latch published in between is a later wake
	 * (publishing changes neither req nor epoch), and an epoch change
	 * in between only makes the ack stale, as a later epoch change does */
	:: atomic { (req & BIT(s)) && (epoch & 1) -> e = epoch; seen = ltag }
	fi;
	/* ... then ack = e */
	atomic { ack[s] = e; G_ACK(s) };
#endif
wait:
	/* wait for a latch tag != seen; or leave */
	if
	:: atomic {
		ltag != seen ->
		t = ltag; m = lmask; seen = t;
		if
		:: m & BIT(s) ->
#ifndef MUT_NO_CLEAR
			/* FOLD: the store ack = e (clear TAKEN) with the latch
			 * read: the leader reads ack[s] only in step 1 of the
			 * next token, which cannot begin before s arrives */
			ack[s] = e;
#endif
			n = POPCOUNT(m);
			goto in
#ifdef MUT_IGNORE_MASK
		:: true -> n = POPCOUNT(m); goto in
#endif
		:: else -> t = 0; m = 0
		fi
	   };
	   goto wait
	:: atomic {
		/* leave (not requested, or the epoch changed). FOLD: the test
		 * joins the CAS: the epoch, once changed, stays changed, and
		 * the requester may flip req at any time anyway */
		!(req & BIT(s)) || epoch != e ->
#ifdef MUT_LEAVE_STORE
		/* broken: a plain store instead of the CAS */
		ack[s] = 0; e = 0; seen = 0; goto sleep
#else
		/* CAS(ack[s], e -> 0) */
		if
		:: ack[s] == e -> ack[s] = 0; e = 0; seen = 0; goto sleep
		:: else -> goto taken
		fi
#endif
	   }
	fi;
in:
	participate(s, t, m, n);
	goto wait;
taken:
	/* the CAS failed: the leader has taken s into a latch */
#ifdef SPEC_LITERAL
	/* gang.h as worded: "s waits for that latch and takes part": waits
	 * for a latch tag != seen and takes part in it */
	atomic {
		ltag != seen ->
		t = ltag; m = lmask; seen = t;
		ack[s] = e;
		n = POPCOUNT(m);
		goto in
	};
#else
	/* fixed: `seen` may be older than the latch s was taken into, so s
	 * skips (as usual) every latch without its bit and takes part in
	 * the first one with it, then tries to leave again */
	do
	:: atomic {
		ltag != seen ->
		t = ltag; m = lmask; seen = t;
		if
		:: m & BIT(s) -> ack[s] = e; n = POPCOUNT(m); goto in
		:: else -> t = 0; m = 0
		fi
	   }
	od;
#endif
fin:
	nexit++
}

#ifndef NOREQ
active proctype Requester() {
end:
	do
	:: atomic { req = req ^ 2; G_REQ }
	:: atomic { req = req ^ 4; G_REQ }
	:: atomic { req = req ^ 8; G_REQ }
	:: break        /* stops at any time: a stuck system becomes a
	                 * terminal state, which the deadlock check sees */
	od
}
#endif

init {
	atomic {
		run Worker(1);
		run Worker(2);
		run Worker(3)
	}
}
