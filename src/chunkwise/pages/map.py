"""The collection map: the stored vectors of a Chroma collection projected to 2-D and drawn
as an interactive scatter (one self-contained HTML page, see `chunkwise.pages.inspector`).

The projection is PCA with numpy (the two leading eigenvectors of the covariance of the
centred vectors): deterministic, no new dependency, no network. Above `MAX_POINTS` records a
uniform random sample (fixed seed) is drawn, and the page says so. The page draws on a canvas,
colours points by source or by format (a switch), and a click shows the nearest chunk: its
source, section path, tokens, and the start of its text (`TEXT_CHARS` characters: the whole
collection's text would make the page as big as the corpus).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .inspector import escape, json_script, page

log = logging.getLogger(__name__)

#: above this many records the map shows a random sample of this many
MAX_POINTS = 100_000
#: characters of each chunk's text kept for the click panel
TEXT_CHARS = 280
_SEED = 20_240_521


@dataclass(frozen=True, slots=True)
class CollectionMap:
    """Points of a collection in 2-D, with what a click shows."""

    name: str
    total: int
    """Records in the collection."""
    xy: np.ndarray
    """(n, 2) projected coordinates (n = total, or the sample size when sampled)."""
    ids: Sequence[str]
    metas: Sequence[dict[str, Any]]
    texts: Sequence[str]
    explained: tuple[float, float]
    """Share of the variance along each of the two axes."""

    @property
    def sampled(self) -> bool:
        return len(self.ids) < self.total


def pca_2d(vectors: np.ndarray) -> tuple[np.ndarray, tuple[float, float]]:
    """Project rows onto their two principal axes; signs fixed so that the largest
    coordinate on each axis is positive (the same input always draws the same picture)."""
    m = np.asarray(vectors, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] == 0:
        return np.zeros((0, 2)), (0.0, 0.0)
    m = m - m.mean(axis=0)
    cov = m.T @ m / max(len(m) - 1, 1)
    values, vecs = np.linalg.eigh(cov)
    order = np.argsort(values)[::-1][:2]
    axes = vecs[:, order]
    if axes.shape[1] < 2:
        axes = np.pad(axes, ((0, 0), (0, 2 - axes.shape[1])))
    xy = m @ axes
    for j in range(2):
        col = xy[:, j]
        if col.size and col[np.argmax(np.abs(col))] < 0:
            xy[:, j] = -col
    total = float(values.sum()) or 1.0
    shares = [float(values[k]) / total for k in order] + [0.0, 0.0]
    return xy, (shares[0], shares[1])


def read_collection(*, db_path: Any = None, host: str | None = None, port: int | None = None,
                    collection: str = "chunkwise", timeout: float | None = 60.0,
                    retry_delays: Sequence[float] = (), max_points: int = MAX_POINTS,
                    client: Any = None) -> CollectionMap:
    """Read vectors, metadata and text starts of a chunkwise collection (`StoreError` if
    there is none) and project them; a random sample of `max_points` above that."""
    from ..chroma.store import Store, connect, open_embedder

    c = connect(client=client, db_path=db_path, host=host, port=port, create=False,
                timeout=timeout, retry_delays=retry_delays or (0.5,))
    store = Store(c, collection, open_embedder(c, collection, load=False), create=False,
                  retry_delays=retry_delays or (0.5,))
    total = store.count()
    keep: np.ndarray | None = None
    if total > max_points:
        rng = np.random.default_rng(_SEED)
        keep = np.zeros(total, dtype=bool)
        keep[rng.choice(total, size=max_points, replace=False)] = True
    ids: list[str] = []
    metas: list[dict[str, Any]] = []
    texts: list[str] = []
    rows: list[np.ndarray] = []
    at = 0
    for got in store.pages(include=("embeddings", "metadatas", "documents")):
        n = len(got["ids"])
        take = range(n) if keep is None else [i for i in range(n) if at + i < total and keep[at + i]]
        emb = got["embeddings"]
        for i in take:
            ids.append(got["ids"][i])
            metas.append(dict(got["metadatas"][i] or {}))
            texts.append((got["documents"][i] or "")[:TEXT_CHARS])
            rows.append(np.asarray(emb[i], dtype=np.float32))
        at += n
    matrix = np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)
    xy, explained = pca_2d(matrix)
    log.info("map of %s: %d of %d points", collection, len(ids), total)
    return CollectionMap(collection, max(total, len(ids)), xy, ids, metas, texts, explained)


def render_map(cmap: CollectionMap, *, title: str | None = None) -> str:
    """The self-contained scatter page."""
    title = title or f"chunkwise map · {cmap.name}"
    xy = cmap.xy
    if len(xy):
        lo, hi = xy.min(axis=0), xy.max(axis=0)
        norm = (xy - lo) / np.where(hi - lo > 0, hi - lo, 1.0)
    else:
        norm = xy
    sources = sorted({str(m.get("source", "")) for m in cmap.metas})
    formats = sorted({str(m.get("format", "")) for m in cmap.metas})
    s_index = {s: k for k, s in enumerate(sources)}
    f_index = {f: k for k, f in enumerate(formats)}
    data = {
        "x": [round(float(v), 5) for v in norm[:, 0]] if len(norm) else [],
        "y": [round(float(v), 5) for v in norm[:, 1]] if len(norm) else [],
        "source": [s_index[str(m.get("source", ""))] for m in cmap.metas],
        "format": [f_index[str(m.get("format", ""))] for m in cmap.metas],
        "sources": sources, "formats": formats, "ids": list(cmap.ids),
        "path": [str(m.get("section_path", "")) for m in cmap.metas],
        "tokens": [m.get("tokens") for m in cmap.metas],
        "pages": [[m.get("page_start"), m.get("page_end")] for m in cmap.metas],
        "text": list(cmap.texts), "text_chars": TEXT_CHARS,
    }
    shown = len(cmap.ids)
    note = (f"showing a random sample of {shown:,} of {cmap.total:,} chunks (more than "
            f"{shown:,})" if cmap.sampled else f"{shown:,} chunks")
    body = (f'<header><h1>{escape(title)}</h1><p id="note">{escape(note)} · PCA of the stored '
            f'vectors: axis 1 {cmap.explained[0]:.1%}, axis 2 {cmap.explained[1]:.1%} of the '
            f'variance · colour by <select id="by"><option value="source">source '
            f'({len(sources)})</option><option value="format">format ({len(formats)})</option>'
            f'</select> · wheel to zoom, drag to pan</p></header>'
            f'<div id="wrap"><canvas id="map" width="900" height="700"></canvas>'
            f'<aside id="side"><div id="panel"><p class="hint">Click a point to see its chunk.'
            f'</p></div><ul id="legend"></ul></aside></div>')
    return page(title, _CSS, body, json_script("map-data", data), _JS)


_CSS = """
*{box-sizing:border-box}body{margin:0;font:13px/1.45 system-ui,sans-serif;color:#1d1d1f}
header{padding:8px 14px;border-bottom:1px solid #ddd;background:#fafafa}header h1{font-size:16px;margin:0}
#note{margin:2px 0;color:#555}
#wrap{display:flex;gap:10px;padding:10px}
canvas{border:1px solid #ddd;cursor:crosshair;flex:0 0 auto}
#side{flex:1;min-width:260px;max-height:700px;overflow:auto}
#panel dl{display:grid;grid-template-columns:auto 1fr;gap:2px 8px}#panel dt{color:#777}#panel dd{margin:0;word-break:break-word}
#panel pre{white-space:pre-wrap;overflow-wrap:anywhere;border:1px solid #ddd;padding:4px;background:#fff}
#legend{list-style:none;padding:0;font-size:12px}#legend li{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
#legend i{display:inline-block;width:10px;height:10px;margin-right:6px;border-radius:5px}
.hint{color:#777}
"""

_JS = r"""
(function(){
"use strict";
var d=JSON.parse(document.getElementById("map-data").textContent);
var cv=document.getElementById("map"),ctx=cv.getContext("2d");
var n=d.x.length,W=cv.width,H=cv.height,pad=12;
var zoom=1,ox=0,oy=0,by="source",picked=-1;
var T10=["#4e79a7","#f28e2b","#e15759","#76b7b2","#59a14f","#edc948","#b07aa1","#ff9da7","#9c755f","#17becf"];
function colour(k){return k<T10.length?T10[k]:"hsl("+((k*137.508)%360).toFixed(1)+",65%,"+(k%2?"42%":"55%")+")";}
function px(i){return pad+(d.x[i]*(W-2*pad)-ox)*zoom;}
function py(i){return H-pad-(d.y[i]*(H-2*pad)-oy)*zoom;}
function draw(){
  ctx.clearRect(0,0,W,H);
  var groups=d[by],names=d[by+"s"],fills=names.map(function(_,k){return colour(k);});
  var r=n>20000?1.5:2.5;
  for(var g=0;g<names.length;g++){
    ctx.fillStyle=fills[g];ctx.beginPath();
    for(var i=0;i<n;i++){if(groups[i]!==g)continue;var x=px(i),y=py(i);
      if(x<-2||y<-2||x>W+2||y>H+2)continue;ctx.moveTo(x+r,y);ctx.arc(x,y,r,0,6.2832);}
    ctx.fill();
  }
  if(picked>=0){ctx.strokeStyle="#000";ctx.lineWidth=2;ctx.beginPath();ctx.arc(px(picked),py(picked),6,0,6.2832);ctx.stroke();}
  var lg=document.getElementById("legend");lg.textContent="";
  names.slice(0,200).forEach(function(nm,k){var li=document.createElement("li"),dot=document.createElement("i");
    dot.style.background=fills[k];li.title=nm||"(none)";li.appendChild(dot);li.appendChild(document.createTextNode(nm||"(none)"));lg.appendChild(li);});
  if(names.length>200){var li=document.createElement("li");li.textContent="… "+(names.length-200)+" more";lg.appendChild(li);}
}
function el(tag,text){var e=document.createElement(tag);if(text!==undefined)e.textContent=text;return e;}
function show(i){
  var p=document.getElementById("panel");p.textContent="";
  var dl=el("dl");
  function row(k,v){dl.appendChild(el("dt",k));dl.appendChild(el("dd",v));}
  row("id",d.ids[i]);row("source",d.sources[d.source[i]]);row("format",d.formats[d.format[i]]);
  row("section_path",d.path[i]||"–");row("tokens",d.tokens[i]===null?"–":String(d.tokens[i]));
  var pg=d.pages[i];if(pg[0]!==null&&pg[0]!==undefined)row("pages",pg[0]+"–"+pg[1]);
  p.appendChild(dl);p.appendChild(el("pre",d.text[i]+(d.text[i].length>=d.text_chars?" …":"")));
}
function nearest(x,y){var best=-1,bd=1e18;for(var i=0;i<n;i++){var dx=px(i)-x,dy=py(i)-y,q=dx*dx+dy*dy;if(q<bd){bd=q;best=i;}}return bd<=144?best:-1;}
var drag=null,moved=false;
cv.addEventListener("mousedown",function(e){drag=[e.offsetX,e.offsetY,ox,oy];moved=false;});
window.addEventListener("mouseup",function(){drag=null;});
cv.addEventListener("mousemove",function(e){if(!drag)return;var dx=e.offsetX-drag[0],dy=e.offsetY-drag[1];
  if(Math.abs(dx)+Math.abs(dy)>3)moved=true;if(!moved)return;ox=drag[2]-dx/zoom;oy=drag[3]+dy/zoom;draw();});
cv.addEventListener("click",function(e){if(moved)return;var i=nearest(e.offsetX,e.offsetY);if(i>=0){picked=i;show(i);draw();}});
cv.addEventListener("wheel",function(e){e.preventDefault();var f=e.deltaY<0?1.25:0.8;
  var mx=(e.offsetX-pad)/zoom+ox,my=(H-pad-e.offsetY)/zoom+oy;zoom*=f;ox=mx-(e.offsetX-pad)/zoom;oy=my-(H-pad-e.offsetY)/zoom;draw();},{passive:false});
document.getElementById("by").addEventListener("change",function(e){by=e.target.value;draw();});
window.chunkwiseMap={count:n,position:function(i){var r=cv.getBoundingClientRect();return [r.left+px(i),r.top+py(i)];}};
draw();
document.body.dataset.ready="1";
})();
"""
