package world

import "strconv"

const mask24 = 1<<24 - 1

// scramble24 is a bijection on 24-bit integers: two odd multiplications
// modulo 2^24 separated by xor-shifts, then a constant xor. Each step is
// invertible, so distinct inputs give distinct outputs.
func scramble24(x uint64) uint64 {
	x &= mask24
	x = (x * 0x9e3779) & mask24
	x ^= x >> 12
	x = (x * 0xc2b2af) & mask24
	x ^= x >> 11
	return x ^ 0x5a3c96
}

// scramble renders a sequence number as an opaque, deterministic and unique
// lowercase hex string: six digits for seq < 2^24, with the high bits
// prefixed beyond that. The prefix is written without leading zeros, so the
// string's length tells the parts apart and the mapping stays injective.
func scramble(seq uint64) string { return scrambled("", seq) }

// scrambled is prefix and scramble(seq), made in one string: a decoder
// names every message it reads without an id of its own this way.
func scrambled(prefix string, seq uint64) string {
	var b [32]byte
	out := append(b[:0], prefix...)
	low := scramble24(seq)
	if high := seq >> 24; high != 0 {
		out = strconv.AppendUint(out, high, 16)
	}
	const digits = "0123456789abcdef"
	for shift := 20; shift >= 0; shift -= 4 { // six digits, zero-padded
		out = append(out, digits[low>>shift&15])
	}
	return string(out)
}

// messageID is the id of the outbox message with sequence number seq.
func messageID(seq uint64) string { return scrambled("msg_", seq) }

// recordID is the id minted for the n-th CRM record created without an id.
func recordID(n uint64) string { return scrambled("rec_", n) }
