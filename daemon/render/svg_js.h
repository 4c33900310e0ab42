/* SPDX-License-Identifier: MIT */
/*
 * The style and script embedded in our SVGs (written for gpuprof, not taken
 * from flamegraph.pl). Frames are <g><title/><rect fg:x fg:w/><text/></g>
 * with fg:x / fg:w their start and width in counts, so zooming is exact
 * however deep the zoom. The script must never contain "]]>".
 */
#ifndef GPUPROF_SVG_JS_H
#define GPUPROF_SVG_JS_H

#define SVG_CSS                                                                                    \
	"text{font-family:Verdana,sans-serif;font-size:12px;fill:rgb(0,0,0)}"                      \
	"#title{text-anchor:middle;font-size:17px}#subtitle{text-anchor:middle;fill:#666}"         \
	"#search,#unzoom{cursor:pointer}#search{opacity:0.1}#search:hover,#search.show{opacity:1}" \
	"#frames>g:hover>rect{stroke:black;stroke-width:0.5;cursor:pointer}"                       \
	".hide{display:none}.parent{opacity:0.5}"

/* Globals are kept to a few, and exposed (fg_search, fg_zoom, fg_reset) so
 * tests and users can drive the graph from the console. */
#define SVG_FG_JS                                                                                          \
	"\n'use strict';var FG={};\n"                                                                      \
	"function fg_init(cfg){var d=document;FG.svg=cfg;"                                                 \
	"FG.frames=d.getElementById('frames');FG.details=d.getElementById('details').firstChild;"          \
	"FG.unzoom=d.getElementById('unzoom');FG.search=d.getElementById('search');"                       \
	"FG.matched=d.getElementById('matched');"                                                          \
	"FG.total=+cfg.getAttribute('fg:total');FG.W=+cfg.getAttribute('width');"                          \
	"FG.xpad=+cfg.getAttribute('fg:xpad');FG.icicle=cfg.getAttribute('fg:icicle')==='1';"              \
	"FG.zoomed=null;FG.term=null;"                                                                     \
	"FG.frames.addEventListener('click',function(e){var g=fg_g(e.target);if(g){fg_zoom(g);"            \
	"e.stopPropagation();}});"                                                                         \
	"FG.frames.addEventListener('mouseover',function(e){var g=fg_g(e.target);"                         \
	"if(g)FG.details.nodeValue=g.firstElementChild.textContent;});"                                    \
	"FG.frames.addEventListener('mouseout',function(){FG.details.nodeValue=' ';});"                    \
	"FG.unzoom.addEventListener('click',fg_reset);"                                                    \
	"FG.search.addEventListener('click',function(){if(FG.term){fg_clear();}else{"                      \
	"var t=prompt('Search (regular expression):','');if(t)fg_search(t);}});"                           \
	"window.addEventListener('keydown',function(e){if(FG.svg.classList.contains('hide'))"              \
	"return;if((e.ctrlKey||e.metaKey)&&"                                                               \
	"(e.key==='f'||e.key==='F')){e.preventDefault();var t=prompt('Search (regular "                    \
	"expression):',FG.term||'');if(t)fg_search(t);}else if(e.key==='Escape'){fg_clear();}});}\n"       \
	"function fg_g(n){while(n&&n!==FG.frames){if(n.tagName==='g')return n;n=n.parentNode;}"            \
	"return null;}\n"                                                                                  \
	"function fg_name(g){var t=g.firstElementChild.textContent,i=t.lastIndexOf(' (');"                 \
	"return i<0?t:t.substring(0,i);}\n"                                                                \
	"function fg_r(g){return g.children[1];}\n"                                                        \
	"function fg_label(g,pw){var n=fg_name(g),c=Math.floor(pw/(12*0.59));"                             \
	"g.children[2].textContent=c<3?'':(n.length<=c?n:n.substring(0,c-2)+'..');}\n"                     \
	"function fg_place(g,px,pw){var r=fg_r(g);r.setAttribute('x',px.toFixed(2));"                      \
	"r.setAttribute('width',pw.toFixed(2));g.children[2].setAttribute('x',(px+3).toFixed(2));"         \
	"fg_label(g,pw);}\n"                                                                               \
	"function fg_zoom(z){var zr=fg_r(z),zx=+zr.getAttribute('fg:x'),zw=+zr.getAttribute('fg:w'),"      \
	"zy=+zr.getAttribute('y'),sc=(FG.W-2*FG.xpad)/zw,gs=FG.frames.children;"                           \
	"for(var i=0;i<gs.length;i++){var g=gs[i],r=fg_r(g),x=+r.getAttribute('fg:x'),"                    \
	"w=+r.getAttribute('fg:w'),y=+r.getAttribute('y');g.classList.remove('hide','parent');"            \
	"var up=FG.icicle?y<=zy:y>=zy;"                                                                    \
	"if(x<=zx&&x+w>=zx+zw&&up){fg_place(g,FG.xpad,FG.W-2*FG.xpad);if(g!==z)"                           \
	"g.classList.add('parent');}"                                                                      \
	"else if(x>=zx&&x+w<=zx+zw&&!up){fg_place(g,FG.xpad+(x-zx)*sc,w*sc);}"                             \
	"else g.classList.add('hide');}"                                                                   \
	"FG.zoomed=z;FG.unzoom.classList.remove('hide');if(FG.term)fg_search(FG.term);}\n"                 \
	"function fg_reset(){var gs=FG.frames.children,sc=(FG.W-2*FG.xpad)/FG.total;"                      \
	"for(var i=0;i<gs.length;i++){var g=gs[i],r=fg_r(g);g.classList.remove('hide','parent');"          \
	"fg_place(g,FG.xpad+(+r.getAttribute('fg:x'))*sc,(+r.getAttribute('fg:w'))*sc);}"                  \
	"FG.zoomed=null;FG.unzoom.classList.add('hide');if(FG.term)fg_search(FG.term);}\n"                 \
	"function fg_clear(){var gs=FG.frames.children;for(var i=0;i<gs.length;i++){var r=fg_r(gs[i]);"    \
	"var o=r.getAttribute('fg:fill');if(o){r.setAttribute('fill',o);r.removeAttribute('fg:fill');}}"   \
	"FG.term=null;FG.search.classList.remove('show');FG.matched.textContent=' ';}\n"                   \
	"function fg_search(term){var re;try{re=new RegExp(term);}catch(x){"                               \
	"re=new RegExp(term.replace(/[.*+?^${}()|[\\]\\\\]/g,'\\\\$&'));}"                                 \
	"fg_clear();FG.term=term;var gs=FG.frames.children,m=[],lo=0,hi=FG.total;"                         \
	"if(FG.zoomed){var zr=fg_r(FG.zoomed);lo=+zr.getAttribute('fg:x');"                                \
	"hi=lo+(+zr.getAttribute('fg:w'));}"                                                               \
	"for(var i=0;i<gs.length;i++){var g=gs[i];if(g.classList.contains('hide'))continue;"               \
	"if(!re.test(fg_name(g)))continue;var r=fg_r(g);r.setAttribute('fg:fill',r.getAttribute('fill'));" \
	"r.setAttribute('fill','rgb(230,0,230)');var x=+r.getAttribute('fg:x'),w=+r.getAttribute('fg:w');" \
	"m.push([Math.max(x,lo),Math.min(x+w,hi)]);}"                                                      \
	"m.sort(function(a,b){return a[0]-b[0];});var sum=0,end=-1;"                                       \
	"for(var j=0;j<m.length;j++){var a=Math.max(m[j][0],end);if(m[j][1]>a){sum+=m[j][1]-a;"            \
	"end=m[j][1];}}"                                                                                   \
	"var pct=hi>lo?100*sum/(hi-lo):0;FG.search.classList.add('show');"                                 \
	"FG.matched.textContent='Matched: '+pct.toFixed(1)+'%';return pct;}\n"

/* The flame graph SVG: the frames and their settings on the root element. */
#define SVG_FLAME_JS                                                                                 \
	SVG_FG_JS                                                                                    \
	"function init(evt){fg_init(document.documentElement);"                                      \
	"try{var q=new URLSearchParams(window.location.search);if(q.get('s'))fg_search(q.get('s'));" \
	"}catch(x){}}\n"

/*
 * Heat map (heatmap.c): click a start cell, then (shift-)click an end cell;
 * the flame graph of that time range is drawn from the embedded HMD data
 * with the FG functions above, "Back to heat map" returns. hm_show(a, b)
 * (cell indexes, column-major) and hm_back() are callable from the console.
 */
#define SVG_HEAT_CSS                                                                   \
	"#cells rect,#back{cursor:pointer}#cells rect.in{stroke:black;stroke-width:1}" \
	"#note{fill:#a00}"

#define SVG_HEAT_JS                                                                                                              \
	"\n"                                                                                                                     \
	"var HM={a:null,lo:-1,hi:-1};\n"                                                                                         \
	"function init(evt){var d=document,D=HMD,i,k;HM.svg=d.documentElement;HM.sel=d.getElementById('sel');\n"                 \
	"HM.title=d.getElementById('title');HM.heat=d.getElementById('heat');HM.flame=d.getElementById('flame');\n"              \
	"HM.cells=d.getElementById('cells').children;HM.text=HM.title.textContent;HM.tx=HM.title.getAttribute('x');\n"           \
	"HM.w=HM.svg.getAttribute('width');HM.h=HM.svg.getAttribute('height');HM.cmd=HM.svg.getAttribute('hm:cmd');\n"           \
	"fg_init(HM.flame);var nc=HM.cells.length,m=D.nodes.length/2+1;\n"                                                       \
	"HM.pos=new Int32Array(nc).fill(-1);HM.len=new Int32Array(nc);\n"                                                        \
	"for(i=0;i<D.cells.length;i+=2+2*D.cells[i+1]){HM.pos[D.cells[i]]=i+2;HM.len[D.cells[i]]=D.cells[i+1];}\n"               \
	"HM.m=m;HM.par=new Int32Array(m);HM.nm=new Int32Array(m);\n"                                                             \
	"for(k=1;k<m;k++){HM.par[k]=D.nodes[2*k-2];HM.nm[k]=D.nodes[2*k-1];}\n"                                                  \
	"for(i=0;i<nc;i++)HM.cells[i].hmi=i;\n"                                                                                  \
	"var g=d.getElementById('cells');\n"                                                                                     \
	"g.addEventListener('click',function(e){var c=e.target;if(c.hmi===undefined)return;\n"                                   \
	"if(HM.a===null){HM.a=c.hmi;hm_mark(c.hmi,c.hmi);\n"                                                                     \
	"HM.sel.textContent='start '+c.getAttribute('hm:s')+' ns: click (or shift-click) an end cell';}\n"                       \
	"else{var a=HM.a;HM.a=null;hm_show(a,c.hmi);}});\n"                                                                      \
	"g.addEventListener('mouseover',function(e){var c=e.target;if(HM.a!==null&&c.hmi!==undefined)hm_mark(HM.a,c.hmi);});\n"  \
	"d.getElementById('back').addEventListener('click',hm_back);}\n"                                                         \
	"function hm_mark(a,b){var lo=Math.min(a,b),hi=Math.max(a,b),i;\n"                                                       \
	"for(i=HM.lo;i>=0&&i<=HM.hi;i++)HM.cells[i].classList.remove('in');\n"                                                   \
	"for(i=lo;i<=hi;i++)HM.cells[i].classList.add('in');HM.lo=lo;HM.hi=hi;}\n"                                               \
	"function hm_t(k){return (Math.floor(k/HMD.rows)+(k%HMD.rows)*HMD.bucket/1e9).toFixed(3);}\n"                            \
	"function hm_size(w,h){HM.svg.setAttribute('width',w);HM.svg.setAttribute('height',h);\n"                                \
	"HM.svg.setAttribute('viewBox','0 0 '+w+' '+h);}\n"                                                                      \
	"function hm_show(a,b){var D=HMD,lo=Math.min(a,b),hi=Math.max(a,b),m=HM.m,par=HM.par,i,j,k,p;\n"                         \
	"var tot=new Float64Array(m),x=new Float64Array(m),nx=new Float64Array(m),dep=new Int32Array(m);\n"                      \
	"hm_mark(lo,hi);fg_clear();\n"                                                                                           \
	"for(k=lo;k<=hi;k++){p=HM.pos[k];if(p<0)continue;\n"                                                                     \
	"for(j=0;j<HM.len[k];j++)tot[D.cells[p+2*j]]+=D.cells[p+2*j+1];}\n"                                                      \
	"for(i=m-1;i>0;i--)tot[par[i]]+=tot[i];\n"                                                                               \
	"var sc=(FG.W-2*FG.xpad)/(tot[0]||1),md=0,keep=[];\n"                                                                    \
	"for(i=0;i<m;i++){if(!tot[i])continue;\n"                                                                                \
	"if(i){x[i]=nx[par[i]];nx[par[i]]+=tot[i];dep[i]=dep[par[i]]+1;}nx[i]=x[i];\n"                                           \
	"if(tot[i]*sc<0.1)continue;keep.push(i);if(dep[i]>md)md=dep[i];}\n"                                                      \
	"var H=(md+1)*16+94,base=H-58,NS='http://www.w3.org/2000/svg',fr=FG.frames,cn=D.count,W=Math.max(FG.W,+HM.w);\n"         \
	"while(fr.firstChild)fr.removeChild(fr.firstChild);\n"                                                                   \
	"for(k=0;k<keep.length;k++){i=keep[k];var y=base-(dep[i]+1)*16,g=document.createElementNS(NS,'g'),\n"                    \
	"t=document.createElementNS(NS,'title'),r=document.createElementNS(NS,'rect'),tx=document.createElementNS(NS,'text');\n" \
	"t.textContent=D.names[HM.nm[i]]+' ('+tot[i]+' '+cn+', '+(100*tot[i]/tot[0]).toFixed(2)+'%)';\n"                         \
	"r.setAttribute('y',y);r.setAttribute('height',15);r.setAttribute('fill',D.colors[HM.nm[i]]);\n"                         \
	"r.setAttribute('fg:x',x[i]);r.setAttribute('fg:w',tot[i]);tx.setAttribute('y',(y+10.5).toFixed(1));\n"                  \
	"g.appendChild(t);g.appendChild(r);g.appendChild(tx);fr.appendChild(g);}\n"                                              \
	"FG.total=tot[0];FG.zoomed=null;hm_size(W,H);HM.heat.classList.add('hide');HM.flame.classList.remove('hide');\n"         \
	"FG.details.parentNode.setAttribute('y',H-41);FG.matched.setAttribute('y',H-41);HM.sel.setAttribute('y',H-8);\n"         \
	"HM.title.setAttribute('x',FG.W/2);fg_reset();\n"                                                                        \
	"var s=HM.cells[lo].getAttribute('hm:s'),e=HM.cells[hi].getAttribute('hm:e');\n"                                         \
	"HM.title.textContent=HM.text+': '+hm_t(lo)+' s to '+hm_t(hi+1)+' s ('+tot[0]+' '+cn+')';\n"                             \
	"HM.sel.textContent=HM.cmd?HM.cmd+' --start-ns '+s+' --end-ns '+e:s+' to '+e+' ns';HM.range=[s,e];\n"                    \
	"return tot[0];}\n"                                                                                                      \
	"function hm_back(){fg_clear();HM.flame.classList.add('hide');HM.heat.classList.remove('hide');\n"                       \
	"hm_size(HM.w,HM.h);HM.title.textContent=HM.text;HM.title.setAttribute('x',HM.tx);HM.sel.setAttribute('y',HM.h-12);}\n"

#endif
