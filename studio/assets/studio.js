// Placeholder: the page's script. Lists the threads the API returns.
fetch("/studio/api/threads")
  .then((r) => r.json())
  .then((body) => {
    const main = document.getElementById("studio");
    const list = document.createElement("ul");
    for (const t of body.threads) {
      const item = document.createElement("li");
      item.textContent = `${t.thread_id} (${t.status})`;
      list.appendChild(item);
    }
    main.replaceChildren(list);
  });
