package cuda

import "math"

// Go re-implementations of kernels.cu for emuDevice, one per kernel, with
// the same parameters in the same order.

func (e *emuDevice) embed(n int, x, E, tokens uint64, H int) {
	tok := e.i32(tokens, n)
	out := e.f32(x, n*H)
	for t := 0; t < n; t++ {
		for i := 0; i < H; i++ {
			out[t*H+i] = e.ld(e.wt, E, int64(tok[t])*int64(H)+int64(i))
		}
	}
}

func (e *emuDevice) ropeTable(cosb, sinb, pos uint64, n, half int, ropeScale, freqScale float32, freqFactor uint64) {
	ps := e.i32(pos, n)
	cs, sn := e.f32(cosb, n*half), e.f32(sinb, n*half)
	var ff []float32
	if freqFactor != 0 {
		ff = e.f32(freqFactor, half)
	}
	for t := 0; t < n; t++ {
		theta := float32(ps[t])
		for i := 0; i < half; i++ {
			a := theta
			if ff != nil {
				a /= ff[i]
			}
			a *= freqScale
			cs[t*half+i] = float32(math.Cos(float64(a)))
			sn[t*half+i] = float32(math.Sin(float64(a)))
			theta *= ropeScale
		}
	}
}

func (e *emuDevice) norm(nRows int, x, delta uint64, dlo int64, w, out uint64, olo int64, rows uint64, H int, eps float32) {
	wv := e.f32(w, H)
	for j := 0; j < nRows; j++ {
		r := int64(j)
		if rows != 0 {
			r = int64(e.i32(rows, nRows)[j])
		}
		xr := e.f32(x+uint64(r*int64(H)*4), H)
		var sum float64
		for i := range xr {
			v := xr[i]
			if delta != 0 {
				v += e.gv(delta, r*int64(H)+int64(i), dlo)
				xr[i] = v
			}
			sum += float64(v * v)
		}
		mean := float32(sum / float64(H))
		scale := 1 / float32(math.Sqrt(float64(mean+eps)))
		for i := range xr {
			e.stAct(e.wt, out, int64(j*H+i), olo, (xr[i]*scale)*wv[i])
		}
	}
}

func (e *emuDevice) qkvPost(n int, qkv uint64, qlo int64, bias, qn, kn, cosb, sinb, wslot, kc, vc uint64,
	layerOff int64, nH, nKV, hd, neox int, eps float32) {
	qDim, kvDim := nH*hd, nKV*hd
	stride, half := qDim+2*kvDim, hd/2
	ws := e.i32(wslot, n)
	s := make([]float32, hd)
	for t := 0; t < n; t++ {
		cs, sn := e.f32(cosb+uint64(4*t*half), half), e.f32(sinb+uint64(4*t*half), half)
		for h := 0; h < nH+2*nKV; h++ {
			kind := 2
			if h < nH {
				kind = 0
			} else if h < nH+nKV {
				kind = 1
			}
			src := int64(t*stride + h*hd)
			for d := range s {
				s[d] = e.gv(qkv, src+int64(d), qlo)
				if bias != 0 {
					s[d] += e.ld(dtF32, bias, int64(h*hd+d))
				}
			}
			if kind != 2 && qn != 0 {
				var ss float64
				for _, v := range s {
					ss += float64(v * v)
				}
				mean := float32(ss / float64(hd))
				scale := 1 / float32(math.Sqrt(float64(mean+eps)))
				nw := qn
				if kind == 1 {
					nw = kn
				}
				for d := range s {
					s[d] = (s[d] * scale) * e.ld(dtF32, nw, int64(d))
				}
			}
			if kind != 2 {
				for i := 0; i < half; i++ {
					i0, i1 := 2*i, 2*i+1
					if neox != 0 {
						i0, i1 = i, i+half
					}
					x0, x1 := s[i0], s[i1]
					s[i0] = x0*cs[i] - x1*sn[i]
					s[i1] = x0*sn[i] + x1*cs[i]
				}
			}
			if kind == 0 {
				copy(e.f32(qkv+uint64(4*src), hd), s)
				continue
			}
			hk, dst := h-nH, kc
			if kind == 2 {
				hk, dst = h-nH-nKV, vc
			}
			base := layerOff + int64(ws[t])*int64(kvDim) + int64(hk*hd)
			for d, v := range s {
				e.st(e.kvt, dst, base+int64(d), v)
			}
		}
	}
}

// attention follows the kernel's algorithm: chunks of 32 keys, an online
// softmax per query with the same -inf and zero-weight skips.
func (e *emuDevice) attention(nTiles, nKVgrid, warps int, out uint64, olo int64, qkv, kc, vc uint64, layerOff int64,
	slots, tiles, pos uint64, nH, nKV, hd, R int, scale float32) {
	G := nH / nKV
	if warps != R*G || nKVgrid != nKV {
		panic("attention launched with a block or grid that does not match its tile")
	}
	kvDim, stride := nKV*hd, nH*hd+2*nKV*hd
	tl := e.i32(tiles, 4*nTiles)
	negInf := float32(math.Inf(-1))
	acc := make([]float32, hd)
	// The whole pool, decoded once (kc/vc point at this layer's part).
	var poolSlots int32
	for ti := 0; ti < nTiles; ti++ {
		for _, s := range e.i32(slots+uint64(4*tl[4*ti+2]), int(tl[4*ti+3])) {
			poolSlots = max(poolSlots, s+1)
		}
	}
	K, Vv := e.all(e.kvt, kc+uint64(layerOff)*uint64(e.kvt.size()), int(poolSlots)*kvDim),
		e.all(e.kvt, vc+uint64(layerOff)*uint64(e.kvt.size()), int(poolSlots)*kvDim)
	for ti := 0; ti < nTiles; ti++ {
		tok0, nrows, slotOff, ctx := int(tl[4*ti]), int(tl[4*ti+1]), int(tl[4*ti+2]), int(tl[4*ti+3])
		sl := e.i32(slots+uint64(4*slotOff), ctx)
		for g := 0; g < nKV; g++ {
			for w := 0; w < warps; w++ {
				r, qh := w/G, g*G+w%G
				if r >= nrows {
					continue
				}
				t := tok0 + r
				mypos := int(e.i32(pos, t+1)[t])
				q := e.f32(qkv+uint64(4*(t*stride+qh*hd)), hd)
				m, l := negInf, float32(0)
				clear(acc)
				for c0 := 0; c0 < ctx; c0 += 32 {
					n := min(32, ctx-c0)
					sc := make([]float32, n)
					cmax := negInf
					for j := 0; j < n; j++ {
						sc[j] = negInf
						if c0+j <= mypos {
							base := int(sl[c0+j])*kvDim + g*hd
							var dot float32
							for d := 0; d < hd; d++ {
								dot += q[d] * K[base+d]
							}
							sc[j] = dot * scale
						}
						cmax = max(cmax, sc[j])
					}
					if cmax == negInf {
						continue
					}
					mnew := max(m, cmax)
					corr := float32(math.Exp(float64(m - mnew)))
					var psum float32
					for j := range sc {
						p := float32(0)
						if sc[j] != negInf {
							p = float32(math.Exp(float64(sc[j] - mnew)))
						}
						sc[j] = p
						psum += p
					}
					l = l*corr + psum
					for d := range acc {
						acc[d] *= corr
					}
					for j, p := range sc {
						if p == 0 {
							continue
						}
						base := int(sl[c0+j])*kvDim + g*hd
						for d := range acc {
							acc[d] += p * Vv[base+d]
						}
					}
					m = mnew
				}
				inv := float32(0)
				if l > 0 {
					inv = 1 / l
				}
				for d, v := range acc {
					e.stAct(e.wt, out, int64(t*nH*hd+qh*hd+d), olo, v*inv)
				}
			}
		}
	}
}

func (e *emuDevice) swiglu(out uint64, olo int64, gu uint64, glo int64, ffn int, total int64) {
	for idx := int64(0); idx < total; idx++ {
		t, i := idx/int64(ffn), idx%int64(ffn)
		row := t * 2 * int64(ffn)
		g, u := e.gv(gu, row+i, glo), e.gv(gu, row+int64(ffn)+i, glo)
		sg := g / (1 + float32(math.Exp(float64(-g))))
		e.stAct(e.wt, out, idx, olo, sg*u)
	}
}

func (e *emuDevice) argmax(rows int, ids, logits uint64, V int) {
	out := e.i32(ids, rows)
	for r := 0; r < rows; r++ {
		x := e.f32(logits+uint64(4*r*V), V)
		best, bv := 0, float32(math.Inf(-1))
		for i, v := range x {
			if v > bv {
				best, bv = i, v
			}
		}
		out[r] = int32(best)
	}
}
