import Foundation

/// The camera app's page: the live picture (MJPEG in an <img>, fitted by CSS object-fit as the layer's gravity
/// says), tap to focus and double tap to expose with marker boxes that shrink into place as in the seed, reset,
/// camera switch, flash, torch and zoom, a photo button with a gallery of download links, a record button with a
/// running timer, the session's capture controls as range inputs (`/controls`), and the microphone's level;
/// `/status` is polled twice a second, so a camera plugged in or out
/// shows in the camera count.
enum CameraAppPage {
    static func html(token: String) -> String {
        // The token is only ever echoed as a JSON string literal, so nothing in it can end the script.
        let tokenLiteral =
            (try? String(decoding: JSONSerialization.data(withJSONObject: [token], options: []), as: UTF8.self))
            .map { String($0.dropFirst().dropLast()) } ?? "\"\""
        return page.replacingOccurrences(of: "TOKEN_LITERAL", with: tokenLiteral)
    }

    private static let page = """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>OpenAVCapture camera</title>
        <style>
          body { margin: 0; background: #111; color: #eee; font: 14px system-ui, sans-serif; }
          #stage { position: relative; width: 100vw; height: 70vh; background: #000; overflow: hidden; }
          #preview { width: 100%; height: 100%; object-fit: contain; display: block; user-select: none; }
          .marker { position: absolute; width: 120px; height: 120px; margin: -60px 0 0 -60px; border: 2px solid;
                    box-sizing: border-box; pointer-events: none; animation: settle 0.6s ease-out forwards; }
          .focus { border-color: #39f; } .expose { border-color: #fa0; }
          @keyframes settle { from { transform: scale(1.6); opacity: 1; } 70% { transform: scale(1); opacity: 1; }
                              to { transform: scale(1); opacity: 0; } }
          #controls { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; padding: 8px; }
          button, select { font: inherit; padding: 6px 10px; }
          #record.on { background: #c00; color: #fff; }
          #meter { width: 120px; height: 10px; background: #333; } #level { height: 100%; width: 0; background: #3c5; }
          #capture-controls { display: flex; flex-wrap: wrap; gap: 12px; padding: 0 8px; }
          .capture-control input { width: 200px; vertical-align: middle; } .capture-control .value { color: #fc0; }
          #gallery { display: flex; gap: 6px; padding: 8px; flex-wrap: wrap; }
          #gallery img { height: 64px; } #gallery a, #hls { color: #9cf; }
        </style></head>
        <body>
        <div id="stage"><img id="preview" alt="live preview"></div>
        <div id="controls">
          <button id="reset">Reset focus</button>
          <button id="switch">Switch camera</button> <span id="camera"></span>
          <label>Flash <select id="flash"><option>off</option><option>on</option><option>auto</option></select></label>
          <label>Torch <select id="torch"><option>off</option><option>on</option><option>auto</option></select></label>
          <label>Zoom <input id="zoom" type="range" min="0" max="1" step="0.05" value="0"></label>
          <button id="photo">Photo</button>
          <button id="record">Record</button> <span id="timer"></span>
          <span id="meter"><div id="level"></div></span> <span id="stats"></span>
          <a id="hls" hidden>HLS stream</a>
        </div>
        <div id="capture-controls"></div>
        <div id="gallery"></div>
        <script>
        const token = TOKEN_LITERAL;
        const q = token ? "?token=" + encodeURIComponent(token) : "";
        const $ = (id) => document.getElementById(id);
        $("preview").src = "stream" + q;
        async function post(path, body) {
          const r = await fetch(path + q, { method: "POST", headers: { "Content-Type": "application/json" },
                                           body: JSON.stringify(body || {}) });
          return r.ok ? r.json() : null;
        }
        function tap(event, kind) {
          const img = $("preview"), box = img.getBoundingClientRect();
          const x = event.clientX - box.left, y = event.clientY - box.top;
          const marker = document.createElement("div");
          marker.className = "marker " + kind; marker.style.left = x + "px"; marker.style.top = y + "px";
          $("stage").appendChild(marker); setTimeout(() => marker.remove(), 700);
          post(kind, { x: x, y: y, width: box.width, height: box.height });
        }
        $("preview").addEventListener("click", (e) => tap(e, "focus"));
        $("preview").addEventListener("dblclick", (e) => tap(e, "expose"));
        $("reset").onclick = () => post("reset");
        $("switch").onclick = () => post("switch");
        $("flash").onchange = (e) => post("flash", { mode: e.target.value });
        $("torch").onchange = (e) => post("torch", { mode: e.target.value });
        $("zoom").onchange = (e) => post("zoom", { value: parseFloat(e.target.value) });
        $("photo").onclick = () => post("photo");
        $("record").onclick = () => post("record");
        let shownFiles = "";
        async function refresh() {
          try {
            const r = await fetch("status" + q); if (!r.ok) return;
            const s = await r.json();
            $("preview").style.objectFit = s.objectFit;
            $("camera").textContent = s.camera + " (" + s.cameras.length + " cameras)";
            $("switch").disabled = s.cameras.length < 2;
            $("flash").disabled = !s.hasFlash; $("torch").disabled = !s.hasTorch;
            if (document.activeElement !== $("flash")) $("flash").value = s.flashMode;
            if (document.activeElement !== $("torch")) $("torch").value = s.torchMode;
            $("record").classList.toggle("on", s.isRecording);
            $("record").textContent = s.isRecording ? "Stop" : "Record";
            const t = Math.floor(s.recordedSeconds);
            $("timer").textContent = s.isRecording ? String(Math.floor(t / 60)).padStart(2, "0") + ":" +
                                                     String(t % 60).padStart(2, "0") : "";
            const level = s.audioLevel == null ? 0 : Math.max(0, Math.min(1, (s.audioLevel + 60) / 60));
            $("level").style.width = (level * 100) + "%";
            $("stats").textContent = s.fps + " fps, " + s.dropped + " dropped, " + s.viewers + " viewing";
            if (s.hls) { $("hls").href = s.hls + q; $("hls").hidden = false; }
            const files = s.files.join("/");
            if (files !== shownFiles) {
              shownFiles = files;
              $("gallery").replaceChildren(...s.files.slice().reverse().map((name) => {
                const a = document.createElement("a");
                a.href = "media/" + encodeURIComponent(name) + q; a.download = name; a.className = "file";
                if (/\\.jpe?g$/i.test(name)) { const i = document.createElement("img"); i.src = a.href; a.appendChild(i); }
                else a.textContent = name;
                return a;
              }));
            }
          } catch (e) {}
        }
        // The session's controls (Apple's AVCaptureControl: system zoom and exposure sliders, the app's own), one
        // range input each, rebuilt when the list changes (a camera switch), their values followed while not held.
        let shownControls = "";
        // One request per control at a time, the newest value sent last, so a drag ends where the hand stopped.
        const controlSends = {};
        function sendControl(index, value, shown) {
          const s = controlSends[index] || (controlSends[index] = { busy: false, next: null });
          s.next = value;
          if (s.busy) return;
          s.busy = true;
          (async () => {
            while (s.next !== null) {
              const v = s.next; s.next = null;
              const answer = await post("controls/" + index, { value: v });
              if (answer) shown.textContent = answer.control.text;
            }
            s.busy = false;
          })();
        }
        async function refreshControls() {
          try {
            const r = await fetch("controls" + q); if (!r.ok) return;
            const list = (await r.json()).controls;
            const shape = list.map((c) => [c.index, c.title, c.min, c.max].join(":")).join("/");
            if (shape !== shownControls) {
              shownControls = shape;
              $("capture-controls").replaceChildren(...list.map((c) => {
                const label = document.createElement("label"), input = document.createElement("input");
                const value = document.createElement("span");
                label.className = "capture-control"; value.className = "value";
                input.type = "range"; input.id = "control-" + c.index; input.dataset.index = c.index;
                input.min = c.min; input.max = c.max;
                input.step = c.step == null ? (c.max - c.min) / 100 : c.step;
                input.oninput = () => sendControl(c.index, parseFloat(input.value), value);
                label.append(c.title + " ", input, " ", value);
                return label;
              }));
            }
            for (const c of list) {
              const input = $("control-" + c.index); if (!input) continue;
              input.disabled = !c.enabled;
              if (document.activeElement !== input) input.value = c.value;
              input.parentElement.querySelector(".value").textContent = c.text;
            }
          } catch (e) {}
        }
        setInterval(refresh, 500); refresh();
        setInterval(refreshControls, 500); refreshControls();
        </script></body></html>
        """
}
