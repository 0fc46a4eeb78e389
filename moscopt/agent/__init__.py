"""The agent: route a task to skills, run the loop with tools, grade; external agents."""
