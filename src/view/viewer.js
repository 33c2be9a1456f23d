// The timewarp viewer: plays a recorded run in WebGL2, inside the page `timewarp view` writes.
//
// The page holds the run (see src/view/mod.rs): `tw-meta`, JSON (times, bodies, layout), and
// `tw-data`, base64 (maybe of gzip) of the frames, body-major. This script decodes them, then
// draws every frame with one instanced draw call per kind of shape and set (static, dynamic):
// a unit sphere, box, cylinder or square, scaled by the body's size, rotated by its quaternion
// and moved to its position in the vertex shader. Between two recorded frames positions are
// interpolated linearly and rotations by normalised linear interpolation on the shorter arc
// (what glTF's LINEAR means for rotations, up to the slerp's speed along the arc); at a
// recorded time the body is exactly where the run put it.
//
// The camera orbits a target point: with yaw y, pitch p and distance r the eye is at
//   target + r * (cos p sin y, sin p, cos p cos y),
// looking at the target with +y up; the projection is a perspective of 45 degrees vertical
// field of view over the canvas's aspect ratio (width / height), OpenGL's clip conventions
// (glam's `camera::rh::proj::opengl::perspective` and `camera::rh::view::look_at_mat4` give
// the same matrices); a point
// at normalised device coordinates (x, y) is drawn at pixel ((x + 1) / 2 * W, (1 - y) / 2 * H)
// of a W x H canvas. The default camera looks at the centre of the box around the bodies at
// the first frame (each with the sphere that holds its shape; planes left out) from far
// enough to see the sphere around that box. A plane is drawn as a square with a 1 m grid,
// seen from its free side only: from the solid side it is not drawn (so the walls of a closed
// box between the camera and the bodies are left out).
// Drag to orbit, shift-drag or right-drag to pan, wheel to zoom; keys: space plays and
// pauses, arrows step a frame, h resets the camera.
//
// The URL hash pins what a test needs (all optional, `&`-separated):
//   t=SECONDS        start at this simulated time
//   paused           start paused (else the run plays, looping)
//   speed=X          playback speed (simulated seconds per second)
//   cam=Y,P,R,X,Y,Z  yaw and pitch (radians), distance and target of the camera
//   color=speed|group|shape
//   hide=dynamic     draw the static bodies only (a test's background)
//   ui=0             no controls, no text: the canvas alone
// Once the first frame is drawn, <body> gets data-ready="1" and data-frame-time="T", the time
// it drew; data-time is the player's time, which moves on while it plays; errors are shown on
// the page and set data-error.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const FOVY = Math.PI / 4;
  const BACKGROUND = [0.11, 0.122, 0.141];
  const STATIC_RGB = [0.62, 0.63, 0.66];
  const PLANE_RGB = [0.42, 0.44, 0.47];
  const SHAPE_RGB = { sphere: [0.9, 0.55, 0.2], box: [0.25, 0.7, 0.65], cylinder: [0.6, 0.45, 0.85] };
  const ALONE_RGB = [0.55, 0.6, 0.7];
  const ASLEEP = 0x80000000;
  const KINDS = ["sphere", "box", "cylinder", "plane"];

  // ---- small vector and matrix helpers (column-major 4x4) ----
  const sub = (a, b) => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
  const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
  const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
  const norm = (a) => { const l = Math.hypot(a[0], a[1], a[2]) || 1; return [a[0] / l, a[1] / l, a[2] / l]; };

  function perspective(fovy, aspect, near, far) {
    const f = 1 / Math.tan(fovy / 2), nf = 1 / (near - far);
    return [f / aspect, 0, 0, 0, 0, f, 0, 0, 0, 0, (far + near) * nf, -1, 0, 0, 2 * far * near * nf, 0];
  }

  function lookAt(eye, target, up) {
    const f = norm(sub(target, eye)), s = norm(cross(f, up)), u = cross(s, f);
    return [s[0], u[0], -f[0], 0, s[1], u[1], -f[1], 0, s[2], u[2], -f[2], 0,
      -dot(s, eye), -dot(u, eye), dot(f, eye), 1];
  }

  function mul(a, b) {
    const o = new Array(16).fill(0);
    for (let c = 0; c < 4; c++) for (let r = 0; r < 4; r++)
      for (let k = 0; k < 4; k++) o[c * 4 + r] += a[k * 4 + r] * b[c * 4 + k];
    return o;
  }

  // ---- unit meshes: interleaved position and normal, and u16 indices ----
  function meshSphere() {
    const v = [], idx = [], stacks = 16, slices = 28;
    for (let i = 0; i <= stacks; i++) {
      const th = Math.PI * i / stacks;
      for (let j = 0; j <= slices; j++) {
        const ph = 2 * Math.PI * j / slices;
        const n = [Math.sin(th) * Math.cos(ph), Math.cos(th), -Math.sin(th) * Math.sin(ph)];
        v.push(...n, ...n);
      }
    }
    const row = slices + 1;
    for (let i = 0; i < stacks; i++) for (let j = 0; j < slices; j++) {
      const a = i * row + j, b = a + row;
      idx.push(a, b, b + 1, a, b + 1, a + 1);
    }
    return { v, idx };
  }

  function meshBox() {
    const v = [], idx = [];
    for (let axis = 0; axis < 3; axis++) for (const s of [1, -1]) {
      const n = [0, 0, 0]; n[axis] = s;
      const u = [0, 0, 0]; u[(axis + 1) % 3] = s;
      const w = cross(n, u), base = v.length / 6;
      for (const [a, b] of [[-1, -1], [1, -1], [1, 1], [-1, 1]])
        v.push(n[0] + u[0] * a + w[0] * b, n[1] + u[1] * a + w[1] * b, n[2] + u[2] * a + w[2] * b, ...n);
      idx.push(base, base + 1, base + 2, base, base + 2, base + 3);
    }
    return { v, idx };
  }

  function meshCylinder() {
    const v = [], idx = [], seg = 40;
    const ring = (j) => { const p = 2 * Math.PI * j / seg; return [Math.cos(p), 0, -Math.sin(p)]; };
    for (let j = 0; j <= seg; j++) {
      const n = ring(j);
      v.push(n[0], -1, n[2], ...n, n[0], 1, n[2], ...n);
    }
    for (let j = 0; j < seg; j++) { const a = 2 * j, b = a + 2; idx.push(a, b, b + 1, a, b + 1, a + 1); }
    for (const s of [1, -1]) {
      const c = v.length / 6;
      v.push(0, s, 0, 0, s, 0);
      for (let j = 0; j < seg; j++) { const n = ring(j); v.push(n[0], s, n[2], 0, s, 0); }
      for (let j = 0; j < seg; j++) {
        const a = c + 1 + j, b = c + 1 + (j + 1) % seg;
        if (s > 0) idx.push(c, a, b); else idx.push(c, b, a);
      }
    }
    return { v, idx };
  }

  function meshSquare() {
    return { v: [-1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, -1, 0, 1, 0, -1, 0, -1, 0, 1, 0], idx: [0, 1, 2, 0, 2, 3] };
  }

  // ---- shaders ----
  const VS = `#version 300 es
layout(location = 0) in vec3 aPos;
layout(location = 1) in vec3 aNormal;
layout(location = 2) in vec3 iPos;
layout(location = 3) in vec4 iRot;
layout(location = 4) in vec3 iScale;
layout(location = 5) in vec3 iColor;
uniform mat4 uViewProj;
out vec3 vNormal;
out vec3 vColor;
out vec3 vLocal;
vec3 qrot(vec4 q, vec3 v) { return v + 2.0 * cross(q.xyz, cross(q.xyz, v) + q.w * v); }
void main() {
  vec3 local = aPos * iScale;
  vLocal = local;
  vNormal = qrot(iRot, aNormal / iScale);
  vColor = iColor;
  gl_Position = uViewProj * vec4(qrot(iRot, local) + iPos, 1.0);
}`;
  const FS = `#version 300 es
precision highp float;
in vec3 vNormal;
in vec3 vColor;
in vec3 vLocal;
uniform float uGrid;
out vec4 outColor;
void main() {
  if (uGrid > 0.5 && !gl_FrontFacing) discard;
  vec3 n = normalize(vNormal) * (gl_FrontFacing ? 1.0 : -1.0);
  vec3 light = normalize(vec3(0.45, 1.0, 0.3));
  float sky = 0.5 + 0.5 * n.y;
  vec3 c = vColor * (0.32 + 0.18 * sky + 0.6 * max(dot(n, light), 0.0));
  if (uGrid > 0.5) {
    vec2 g = abs(fract(vLocal.xz + 0.5) - 0.5) / fwidth(vLocal.xz);
    float line = 1.0 - min(min(g.x, g.y), 1.0);
    c = mix(c, c * 1.45, line * 0.6);
  }
  outColor = vec4(pow(c, vec3(1.0 / 1.15)), 1.0);
}`;

  function fail(message) {
    $("message").textContent = message;
    document.body.dataset.error = message;
  }

  async function decodeData(text, encoding) {
    const bin = atob(text.replace(/\s+/g, ""));
    let bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    if (encoding === "gzip") {
      const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      bytes = new Uint8Array(await new Response(stream).arrayBuffer());
    }
    return bytes;
  }

  function parseHash() {
    const h = new URLSearchParams(location.hash.slice(1));
    const num = (k) => (h.has(k) && h.get(k) !== "" && isFinite(+h.get(k)) ? +h.get(k) : null);
    const cam = h.has("cam") ? h.get("cam").split(",").map(Number) : null;
    return {
      t: num("t"), paused: h.has("paused"), speed: num("speed"),
      cam: cam && cam.length === 6 && cam.every(isFinite) ? cam : null,
      color: h.get("color"), hide: h.get("hide"), ui: h.get("ui"),
    };
  }

  // Speed colours: dark blue, cyan, yellow-green, orange, red.
  const RAMP = [[0.16, 0.26, 0.7], [0.1, 0.7, 0.85], [0.6, 0.87, 0.3], [0.97, 0.62, 0.15], [0.88, 0.16, 0.1]];
  function rampColor(x, out, o) {
    x = Math.min(Math.max(x, 0), 1) * (RAMP.length - 1);
    const i = Math.min(Math.floor(x), RAMP.length - 2), f = x - i;
    for (let k = 0; k < 3; k++) out[o + k] = RAMP[i][k] + (RAMP[i + 1][k] - RAMP[i][k]) * f;
  }

  function hueColor(h, out, o) {
    const s = 0.62, v = 0.92, i = Math.floor(h * 6), f = h * 6 - i;
    const p = v * (1 - s), q = v * (1 - f * s), t = v * (1 - (1 - f) * s);
    const rgb = [[v, t, p], [q, v, p], [p, v, t], [p, q, v], [t, p, v], [v, p, q]][i % 6];
    out[o] = rgb[0]; out[o + 1] = rgb[1]; out[o + 2] = rgb[2];
  }

  async function main() {
    const meta = JSON.parse($("tw-meta").textContent);
    const bytes = await decodeData($("tw-data").textContent, meta.encoding);
    if (bytes.length !== meta.bytes) throw new Error(`the data holds ${bytes.length} bytes, not ${meta.bytes}`);
    const buf = bytes.buffer;
    const L = meta.layout;
    const P = new Float32Array(buf, L.positions.offset, L.positions.count);
    const R = new Float32Array(buf, L.rotations.offset, L.rotations.count);
    const S = new Float32Array(buf, L.speeds.offset, L.speeds.count);
    const G = L.groups ? new Uint32Array(buf, L.groups.offset, L.groups.count) : null;
    const times = meta.times, F = times.length, D = meta.dynamic.length;
    const t0 = times[0], t1 = times[F - 1];
    const hash = parseHash();

    const canvas = $("view");
    const gl = canvas.getContext("webgl2", { antialias: true, preserveDrawingBuffer: true });
    if (!gl) throw new Error("this browser has no WebGL2");
    if (hash.ui === "0") document.body.classList.add("bare");

    const compile = (type, src) => {
      const s = gl.createShader(type);
      gl.shaderSource(s, src); gl.compileShader(s);
      if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new Error(gl.getShaderInfoLog(s));
      return s;
    };
    const prog = gl.createProgram();
    gl.attachShader(prog, compile(gl.VERTEX_SHADER, VS));
    gl.attachShader(prog, compile(gl.FRAGMENT_SHADER, FS));
    gl.linkProgram(prog);
    if (!gl.getProgramParameter(prog, gl.LINK_STATUS)) throw new Error(gl.getProgramInfoLog(prog));
    const uViewProj = gl.getUniformLocation(prog, "uViewProj");
    const uGrid = gl.getUniformLocation(prog, "uGrid");

    const meshes = { sphere: meshSphere(), box: meshBox(), cylinder: meshCylinder(), plane: meshSquare() };
    // One draw per kind and set: its bodies, a VAO over the kind's mesh and an instance buffer
    // of 13 floats per body (position, rotation, scale, colour).
    const sets = [];
    const column = new Map(meta.dynamic.map((id, j) => [id, j]));
    for (const kind of KINDS) {
      for (const isStatic of [true, false]) {
        const ids = [];
        meta.bodies.forEach((b, i) => { if (b.kind === kind && b.static === isStatic) ids.push(i); });
        if (!ids.length) continue;
        const m = meshes[kind];
        const vao = gl.createVertexArray();
        gl.bindVertexArray(vao);
        const vb = gl.createBuffer();
        gl.bindBuffer(gl.ARRAY_BUFFER, vb);
        gl.bufferData(gl.ARRAY_BUFFER, new Float32Array(m.v), gl.STATIC_DRAW);
        gl.enableVertexAttribArray(0); gl.vertexAttribPointer(0, 3, gl.FLOAT, false, 24, 0);
        gl.enableVertexAttribArray(1); gl.vertexAttribPointer(1, 3, gl.FLOAT, false, 24, 12);
        const ib = gl.createBuffer();
        gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, ib);
        gl.bufferData(gl.ELEMENT_ARRAY_BUFFER, new Uint16Array(m.idx), gl.STATIC_DRAW);
        const inst = gl.createBuffer();
        gl.bindBuffer(gl.ARRAY_BUFFER, inst);
        const data = new Float32Array(ids.length * 13);
        gl.bufferData(gl.ARRAY_BUFFER, data.byteLength, isStatic ? gl.STATIC_DRAW : gl.DYNAMIC_DRAW);
        for (const [loc, n, off] of [[2, 3, 0], [3, 4, 12], [4, 3, 28], [5, 3, 40]]) {
          gl.enableVertexAttribArray(loc);
          gl.vertexAttribPointer(loc, n, gl.FLOAT, false, 52, off);
          gl.vertexAttribDivisor(loc, 1);
        }
        gl.bindVertexArray(null);
        // The column of each dynamic body in the frame arrays.
        const cols = isStatic ? null : ids.map((i) => column.get(i));
        sets.push({ kind, isStatic, ids, cols, vao, inst, data, count: m.idx.length });
        if (isStatic) {
          ids.forEach((id, k) => {
            const b = meta.bodies[id];
            data.set([...b.position, ...b.rotation, ...b.size, ...(kind === "plane" ? PLANE_RGB : STATIC_RGB)], k * 13);
          });
          gl.bufferSubData(gl.ARRAY_BUFFER, 0, data);
        }
      }
    }

    // ---- the state of the player ----
    const state = {
      t: hash.t !== null ? Math.min(Math.max(hash.t, t0), t1) : t0,
      playing: !hash.paused,
      speed: hash.speed !== null && hash.speed > 0 ? hash.speed : 1,
      color: ["speed", "group", "shape"].includes(hash.color) ? hash.color : "speed",
      hideDynamic: hash.hide === "dynamic",
      cam: null,
    };
    if (state.color === "group" && !G) state.color = "speed";

    // The default camera: see the top of this file.
    function homeCamera() {
      let lo = [Infinity, Infinity, Infinity], hi = [-Infinity, -Infinity, -Infinity];
      const add = (x, y, z, r) => {
        lo = [Math.min(lo[0], x - r), Math.min(lo[1], y - r), Math.min(lo[2], z - r)];
        hi = [Math.max(hi[0], x + r), Math.max(hi[1], y + r), Math.max(hi[2], z + r)];
      };
      const reach = (b) => Math.hypot(...b.size);
      meta.bodies.forEach((b) => { if (b.static && b.kind !== "plane") add(...b.position, reach(b)); });
      for (let j = 0; j < D; j++) {
        const o = j * F * 3;
        add(P[o], P[o + 1], P[o + 2], reach(meta.bodies[meta.dynamic[j]]));
      }
      if (!(lo[0] <= hi[0])) { lo = [-1, -1, -1]; hi = [1, 1, 1]; }
      const target = [(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, (lo[2] + hi[2]) / 2];
      const radius = Math.max(Math.hypot(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]) / 2, 0.5);
      const aspect = canvas.clientWidth / Math.max(canvas.clientHeight, 1);
      const half = Math.min(FOVY / 2, Math.atan(Math.tan(FOVY / 2) * aspect));
      return { yaw: 0.55, pitch: 0.38, dist: radius / Math.sin(half), target };
    }
    state.cam = hash.cam
      ? { yaw: hash.cam[0], pitch: hash.cam[1], dist: hash.cam[2], target: hash.cam.slice(3) }
      : homeCamera();

    function eyeOf(c) {
      const cp = Math.cos(c.pitch);
      return [c.target[0] + c.dist * cp * Math.sin(c.yaw), c.target[1] + c.dist * Math.sin(c.pitch),
        c.target[2] + c.dist * cp * Math.cos(c.yaw)];
    }

    function viewProj(w, h) {
      const c = state.cam;
      const proj = perspective(FOVY, w / h, c.dist * 0.01, c.dist * 20 + 2000);
      return mul(proj, lookAt(eyeOf(c), c.target, [0, 1, 0]));
    }

    // Where the page draws a world point, in CSS pixels (for tests and curious users).
    function project(p) {
      const w = canvas.clientWidth, h = canvas.clientHeight, m = viewProj(w, h);
      const x = m[0] * p[0] + m[4] * p[1] + m[8] * p[2] + m[12];
      const y = m[1] * p[0] + m[5] * p[1] + m[9] * p[2] + m[13];
      const ww = m[3] * p[0] + m[7] * p[1] + m[11] * p[2] + m[15];
      return [(x / ww + 1) / 2 * w, (1 - y / ww) / 2 * h];
    }

    // The frame before time t and how far towards the next one t is.
    function frameAt(t) {
      let lo = 0, hi = F - 1;
      if (t >= times[hi]) return [hi, 0];
      while (hi - lo > 1) { const mid = (lo + hi) >> 1; if (times[mid] <= t) lo = mid; else hi = mid; }
      return [lo, (t - times[lo]) / (times[lo + 1] - times[lo])];
    }

    function fillDynamic(set, f, a) {
      const data = set.data, g = f + (a > 0 ? 1 : 0);
      // Group sizes at this frame, to tell a body alone from a group.
      let members = null;
      if (state.color === "group") {
        members = new Map();
        for (let j = 0; j < D; j++) {
          const v = G[j * F + f] & ~ASLEEP;
          members.set(v, (members.get(v) || 0) + 1);
        }
      }
      set.ids.forEach((id, k) => {
        const j = set.cols[k], o = k * 13, b = meta.bodies[id];
        const p0 = (j * F + f) * 3, p1 = (j * F + g) * 3;
        for (let c = 0; c < 3; c++) data[o + c] = P[p0 + c] + (P[p1 + c] - P[p0 + c]) * a;
        const q0 = (j * F + f) * 4, q1 = (j * F + g) * 4;
        const sgn = R[q0] * R[q1] + R[q0 + 1] * R[q1 + 1] + R[q0 + 2] * R[q1 + 2] + R[q0 + 3] * R[q1 + 3] < 0 ? -1 : 1;
        let len = 0;
        for (let c = 0; c < 4; c++) {
          const v = R[q0 + c] + (sgn * R[q1 + c] - R[q0 + c]) * a;
          data[o + 3 + c] = v; len += v * v;
        }
        len = Math.sqrt(len) || 1;
        for (let c = 0; c < 4; c++) data[o + 3 + c] /= len;
        data[o + 7] = b.size[0]; data[o + 8] = b.size[1]; data[o + 9] = b.size[2];
        if (state.color === "speed") {
          const s = S[j * F + f] + (S[j * F + g] - S[j * F + f]) * a;
          rampColor(s / meta.speed_scale, data, o + 10);
        } else if (state.color === "group") {
          const v = G[j * F + f], rep = v & ~ASLEEP;
          if (members.get(rep) > 1) hueColor((rep * 0.6180339887) % 1, data, o + 10);
          else data.set(ALONE_RGB, o + 10);
          if (v & ASLEEP) for (let c = 0; c < 3; c++) data[o + 10 + c] *= 0.55;
        } else {
          data.set(SHAPE_RGB[set.kind], o + 10);
        }
      });
    }

    function resize() {
      const dpr = window.devicePixelRatio || 1;
      const w = Math.max(1, Math.round(canvas.clientWidth * dpr));
      const h = Math.max(1, Math.round(canvas.clientHeight * dpr));
      if (canvas.width !== w || canvas.height !== h) { canvas.width = w; canvas.height = h; }
    }

    function draw() {
      resize();
      gl.viewport(0, 0, canvas.width, canvas.height);
      gl.clearColor(...BACKGROUND, 1);
      gl.clear(gl.COLOR_BUFFER_BIT | gl.DEPTH_BUFFER_BIT);
      gl.enable(gl.DEPTH_TEST);
      gl.useProgram(prog);
      gl.uniformMatrix4fv(uViewProj, false, new Float32Array(viewProj(canvas.width, canvas.height)));
      const [f, a] = frameAt(state.t);
      for (const set of sets) {
        if (!set.isStatic) {
          if (state.hideDynamic) continue;
          fillDynamic(set, f, a);
          gl.bindBuffer(gl.ARRAY_BUFFER, set.inst);
          gl.bufferSubData(gl.ARRAY_BUFFER, 0, set.data);
        }
        gl.uniform1f(uGrid, set.kind === "plane" ? 1 : 0);
        gl.bindVertexArray(set.vao);
        gl.drawElementsInstanced(gl.TRIANGLES, set.count, gl.UNSIGNED_SHORT, 0, set.ids.length);
      }
      gl.bindVertexArray(null);
      updateText(f);
    }

    // ---- controls ----
    const slider = $("time"), play = $("play"), speed = $("speed"), color = $("color");
    const SLIDER_STEPS = 1000;
    if (!G) color.querySelector('option[value="group"]').disabled = true;
    color.value = state.color;
    speed.value = String(state.speed);
    if (speed.value !== String(state.speed)) {
      const o = document.createElement("option");
      o.value = String(state.speed); o.textContent = state.speed + "×";
      speed.appendChild(o); speed.value = o.value;
    }
    $("counts").textContent = `· ${meta.bodies.length} bodies (${D} moving) · ${F} frames · ${meta.source}`;

    function updateText(f) {
      slider.value = String(Math.round((state.t - t0) / Math.max(t1 - t0, 1e-9) * SLIDER_STEPS));
      play.textContent = state.playing ? "❚❚" : "▶";
      $("clock").textContent = `t = ${state.t.toFixed(3)} s of ${t1.toFixed(3)} s · frame ${f + 1} of ${F}`;
      const legend = $("legend");
      if (state.color === "speed") {
        const stops = RAMP.map((c) => `rgb(${c.map((x) => Math.round(x * 255)).join(",")})`).join(",");
        legend.innerHTML = `speed, m/s<div class="ramp" style="background:linear-gradient(to right,${stops})"></div>` +
          `0 … ${meta.speed_scale.toPrecision(3)}`;
      } else if (state.color === "group") {
        legend.innerHTML = "contact groups: a colour per group<br>" +
          `<span class="swatch" style="background:rgb(140,153,178)"></span>alone · darker: asleep`;
      } else {
        legend.innerHTML = Object.entries(SHAPE_RGB).map(([k, c]) =>
          `<span class="swatch" style="background:rgb(${c.map((x) => Math.round(x * 255)).join(",")})"></span>${k}`).join("");
      }
    }

    let dirty = true;
    const redraw = () => { dirty = true; };
    play.onclick = () => { state.playing = !state.playing; redraw(); };
    slider.oninput = () => { state.t = t0 + (t1 - t0) * (+slider.value / SLIDER_STEPS); redraw(); };
    speed.onchange = () => { state.speed = +speed.value; };
    color.onchange = () => { state.color = color.value; redraw(); };
    $("home").onclick = () => { state.cam = homeCamera(); redraw(); };
    window.addEventListener("resize", redraw);
    window.addEventListener("keydown", (e) => {
      if (e.target.tagName === "SELECT") return;
      const [f] = frameAt(state.t);
      if (e.key === " ") { state.playing = !state.playing; e.preventDefault(); }
      else if (e.key === "ArrowRight") { state.playing = false; state.t = times[Math.min(f + 1, F - 1)]; }
      else if (e.key === "ArrowLeft") {
        state.playing = false;
        state.t = times[state.t > times[f] ? f : Math.max(f - 1, 0)];
      } else if (e.key === "h") state.cam = homeCamera();
      else return;
      redraw();
    });
    // Orbit, pan and zoom with the pointer.
    let drag = null;
    canvas.addEventListener("contextmenu", (e) => e.preventDefault());
    canvas.addEventListener("pointerdown", (e) => {
      drag = { x: e.clientX, y: e.clientY, pan: e.shiftKey || e.button === 2 };
      canvas.setPointerCapture(e.pointerId);
    });
    canvas.addEventListener("pointerup", () => { drag = null; });
    canvas.addEventListener("pointermove", (e) => {
      if (!drag) return;
      const dx = e.clientX - drag.x, dy = e.clientY - drag.y, c = state.cam;
      drag.x = e.clientX; drag.y = e.clientY;
      if (drag.pan) {
        const k = c.dist * Math.tan(FOVY / 2) * 2 / Math.max(canvas.clientHeight, 1);
        const eye = eyeOf(c), f = norm(sub(c.target, eye)), s = norm(cross(f, [0, 1, 0])), u = cross(s, f);
        for (let i = 0; i < 3; i++) c.target[i] += (-dx * s[i] + dy * u[i]) * k;
      } else {
        c.yaw -= dx * 0.006;
        c.pitch = Math.min(Math.max(c.pitch + dy * 0.006, -1.55), 1.55);
      }
      redraw();
    });
    canvas.addEventListener("wheel", (e) => {
      e.preventDefault();
      state.cam.dist *= Math.exp(Math.sign(e.deltaY) * Math.min(Math.abs(e.deltaY), 100) * 0.0015);
      redraw();
    }, { passive: false });

    // The player's clock: simulated time moves on by the wall time since the last look, times
    // the speed, looking at each animation frame and every 50 ms (animation frames stop in
    // hidden tabs and come rarely in a headless browser; timers follow its virtual time).
    let last = null;
    function advance() {
      const now = performance.now();
      if (state.playing && last !== null) {
        state.t += (now - last) / 1000 * state.speed;
        if (state.t > t1) state.t = t0 + ((state.t - t0) % Math.max(t1 - t0, 1e-9));
        dirty = true;
      }
      last = now;
      document.body.dataset.time = state.t.toFixed(4);
    }
    function loop() {
      advance();
      if (dirty) {
        dirty = false;
        draw();
        if (!document.body.dataset.ready) {
          $("message").textContent = "";
          document.body.dataset.frameTime = String(state.t);
          document.body.dataset.ready = "1";
        }
      }
      requestAnimationFrame(loop);
    }
    setInterval(advance, 50);
    window.timewarp = { meta, state, project, redraw };
    requestAnimationFrame(loop);
  }

  main().catch((e) => fail("The viewer failed: " + (e && e.message ? e.message : e)));
})();
